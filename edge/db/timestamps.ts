/**
 * ISO-8601 form of an epoch-ms timestamp, as the API shows the database's times
 * (e.g. `2026-12-01T08:53:16.000Z`).
 */
export const iso = (ms: number): string => new Date(ms).toISOString();
