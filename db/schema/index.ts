export * from './identity.ts';
export * from './runs.ts';
