import { describe, expect, it } from 'vitest';
import { call } from './edge-client.ts';

describe('GET /v1/health', () => {
  it('answers without a token and lists every tool at 1.2.0 and 1.1.0', async () => {
    const answer = await call('GET', '/v1/health');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      status: 'ok',
      tools: { 'browser.navigate': ['1.2.0', '1.1.0'], 'browser.observe': ['1.2.0', '1.1.0'], 'browser.act': ['1.2.0', '1.1.0'] },
    });
  });
});

describe('GET /v1/openapi.json', () => {
  it('describes every route of the API from the same schemas', async () => {
    const answer = await call('GET', '/v1/openapi.json');
    expect(answer.status).toBe(200);
    expect(answer.body.openapi).toBe('3.1.0');
    expect(Object.keys(answer.body.paths).sort()).toEqual([
      '/v1/approvals',
      '/v1/approvals/{id}/decision',
      '/v1/grants',
      '/v1/grants/{id}/revoke',
      '/v1/health',
      '/v1/policy-profiles/{name}',
      '/v1/runs',
      '/v1/runs/claim',
      '/v1/runs/{id}',
      '/v1/runs/{id}/activity',
      '/v1/runs/{id}/cancel',
      '/v1/runs/{id}/messages',
      '/v1/runs/{id}/report',
      '/v1/runs/{id}/tool-calls',
      '/v1/schedules',
      '/v1/tool-calls/{id}',
    ]);
  });
});
