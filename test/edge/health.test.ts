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
