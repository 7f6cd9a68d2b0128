/** The admin HTTP API, for the composition root. */
export { AdminServer, type AdminServerOptions, type AdminErrorCode, type ExplainAnswer, type HealthReport } from './admin-server.js';
export { describeRobotsSnapshot, type RobotsView } from './robots-view.js';
