// First module of the agent runtime's bundle. While node builds a startup snapshot of the
// runtime (activities/sandbox/startup-snapshot.ts), V8 leaves out the array methods that copy
// (toSorted, toReversed, toSpliced, with): V8 installs them when a process starts from the
// snapshot, but some of node's own modules call them as they load (node:http sorts its method
// names). So they are lent for the build only, as plain functions, and taken away again before
// the heap is written: a process started from the snapshot has V8's own and nothing of these.
import { startupSnapshot } from 'node:v8';

type Lent = (this: unknown[], ...args: never[]) => unknown[];
const lent: Record<string, Lent> = {
  toSorted(this: unknown[], compare?: (a: unknown, b: unknown) => number) {
    return Array.prototype.slice.call(this).sort(compare);
  },
  toReversed(this: unknown[]) {
    return Array.prototype.slice.call(this).reverse();
  },
  toSpliced(this: unknown[], start: number, deleteCount?: number, ...items: unknown[]) {
    const copy = Array.prototype.slice.call(this);
    if (deleteCount === undefined) copy.splice(start);
    else copy.splice(start, deleteCount, ...items);
    return copy;
  },
  with(this: unknown[], index: number, value: unknown) {
    const copy = Array.prototype.slice.call(this);
    const at = index < 0 ? copy.length + index : index;
    if (at < 0 || at >= copy.length) throw new RangeError('Invalid index');
    copy[at] = value;
    return copy;
  },
};

if (startupSnapshot.isBuildingSnapshot()) {
  const added: string[] = [];
  for (const [name, fn] of Object.entries(lent)) {
    if (name in Array.prototype) continue;
    Object.defineProperty(Array.prototype, name, { value: fn, writable: true, configurable: true, enumerable: false });
    added.push(name);
  }
  startupSnapshot.addSerializeCallback(() => {
    for (const name of added) delete (Array.prototype as unknown as Record<string, unknown>)[name];
  });
}
