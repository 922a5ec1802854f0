export * from './identity.ts';
export * from './runs.ts';
export * from './packages.ts';
export * from './models.ts';
export * from './realtime.ts';
