/**
 * Request and response bodies of the agent-facing HTTP API v1 (DESIGN.md section 13). The edge's
 * route validators, the OpenAPI document and the clients (demo agent, tests) all use these.
 * One file per resource in `shared/api/`; this module re-exports them all.
 */

export * from './api/approvals.ts';
export * from './api/common.ts';
export * from './api/grants.ts';
export * from './api/hosts.ts';
export * from './api/owners.ts';
export * from './api/principals.ts';
export * from './api/runs.ts';
export * from './api/schedules.ts';
export * from './api/sign-ins.ts';
export * from './api/tool-calls.ts';
