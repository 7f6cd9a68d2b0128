/** Configuration: YAML loading, schema, defaults, durations and sizes. */
export { defaultConfig, loadConfig, parseConfig, validateConfig } from './load.js';
export { hostGlobsFor, hostOverrideRules, hostOverridesAsYaml } from './host-overrides.js';
export { checkRestartFiles, listenConfigError, placeConfigError, readCaFile, stateDirConfigError } from './runtime-errors.js';
export { formatDuration, formatSize, parseDuration, parseSize } from './units.js';
export type * from './types.js';
export { planReload, RESTART_REQUIRED_KEYS, type ReloadPlan } from './reload-plan.js';
