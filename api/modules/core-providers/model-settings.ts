// What a model accepts against the settings asked of it: shared with the sidecar, so it lives in lib.
export * from '../../../lib/model-settings.ts';
