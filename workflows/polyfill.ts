// The Restate SDK calls Promise.withResolvers, which Node 20 lacks. Import this module before
// anything that loads '@restatedev/restate-sdk' (ESM evaluates imports in order).

interface Resolvers<T> {
  promise: Promise<T>;
  resolve: (value: T | PromiseLike<T>) => void;
  reject: (reason?: unknown) => void;
}

const PromiseWithResolvers = Promise as PromiseConstructor & {
  withResolvers?: <T>() => Resolvers<T>;
};

if (typeof PromiseWithResolvers.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T>(this: PromiseConstructor): Resolvers<T> {
      let resolve!: Resolvers<T>['resolve'];
      let reject!: Resolvers<T>['reject'];
      const promise = new this<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    },
  });
}

export {};
