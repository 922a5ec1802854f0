export * from './identity.ts';
export * from './runs.ts';
export * from './packages.ts';
export * from './models.ts';
export * from './integrations.ts';
export * from './budgets.ts';
export * from './schedules.ts';
export * from './webhooks.ts';
