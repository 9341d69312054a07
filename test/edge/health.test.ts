import { SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { call, type HealthView } from './support/edge-client.ts';

/** The parts of the OpenAPI document read here. */
interface OpenApiDocument {
  openapi: string;
  paths: Record<string, unknown>;
}

describe('GET /v1/health', () => {
  it('answers without a token and lists every tool at 1.5.0, 1.4.0, 1.3.0, 1.2.0 and 1.1.0', async () => {
    const answer = await call<HealthView>('GET', '/v1/health');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      status: 'ok',
      tools: {
        'browser.navigate': ['1.5.0', '1.4.0', '1.3.0', '1.2.0', '1.1.0'],
        'browser.observe': ['1.5.0', '1.4.0', '1.3.0', '1.2.0', '1.1.0'],
        'browser.act': ['1.5.0', '1.4.0', '1.3.0', '1.2.0', '1.1.0'],
      },
    });
  });
});

describe('GET /v1/openapi.json', () => {
  it('describes every route of the API from the same schemas', async () => {
    const answer = await call<OpenApiDocument>('GET', '/v1/openapi.json');
    expect(answer.status).toBe(200);
    expect(answer.body.openapi).toBe('3.1.0');
    expect(Object.keys(answer.body.paths).sort()).toEqual([
      '/docs',
      '/metrics',
      '/v1/approvals',
      '/v1/approvals/{id}/decision',
      '/v1/grants',
      '/v1/grants/{id}/revoke',
      '/v1/health',
      '/v1/host/ceremony-events',
      '/v1/host/snapshots/{profile_id}',
      '/v1/host/snapshots/{profile_id}/{version}',
      '/v1/hosts',
      '/v1/hosts/{id}',
      '/v1/hosts/{id}/drain',
      '/v1/memories',
      '/v1/memories/{id}',
      '/v1/memory-suggestions',
      '/v1/memory-suggestions/{id}/decision',
      '/v1/notices',
      '/v1/openapi.json',
      '/v1/owners/{owner_id}/webhook',
      '/v1/policy-profiles/{name}',
      '/v1/policy-profiles/{name}/versions/{version}/revoke-grants',
      '/v1/principals',
      '/v1/principals/{id}/revoke',
      '/v1/principals/{id}/rotate',
      '/v1/profiles/{profile_id}/revoke',
      '/v1/recipes',
      '/v1/recipes/{id}',
      '/v1/runs',
      '/v1/runs/claim',
      '/v1/runs/{id}',
      '/v1/runs/{id}/activity',
      '/v1/runs/{id}/artifacts',
      '/v1/runs/{id}/artifacts/{artifact_id}',
      '/v1/runs/{id}/cancel',
      '/v1/runs/{id}/files',
      '/v1/runs/{id}/files/{file_id}',
      '/v1/runs/{id}/messages',
      '/v1/runs/{id}/recipe',
      '/v1/runs/{id}/report',
      '/v1/runs/{id}/tool-calls',
      '/v1/schedules',
      '/v1/sign-ins',
      '/v1/sign-ins/{id}/restart',
      '/v1/tool-calls/{id}',
    ]);
  });
});

describe('GET /docs', () => {
  it('is the API reference page over the document, loading its script and style sheet from this origin, never a CDN', async () => {
    const answer = await SELF.fetch('http://edge.test/docs');
    const page = await answer.text();
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page).toContain("url: '/v1/openapi.json'");
    const sources = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]);
    expect(sources.sort()).toEqual(['/docs/assets/swagger-ui-dist/swagger-ui-bundle.js', '/docs/assets/swagger-ui-dist/swagger-ui.css']);
  });
});
