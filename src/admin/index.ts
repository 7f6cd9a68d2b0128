/** The admin HTTP API, for the composition root. */
export { AdminServer, type AdminServerOptions, type AdminErrorCode, type HealthReport } from './admin-server.js';
