import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import { type EdgeRuntime, LOCAL_OWNER_ID, type LocalStack, startLocalStack } from '../../scripts/local-stack.ts';
import { type FixtureServer, startFixtureServer } from '../support/fixture-server.ts';

// Owner webhooks (issue 15) from the real edge (wrangler dev, and Node) to a loopback receiver:
// "approval needed" and "run ended" arrive signed; a delivery that fails is retried by the cron
// pass once it is due.

const SECRET = 'webhook-secret-of-the-test-owner-0123456789';

interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A loopback receiver that records every post and answers `status()` to it. */
async function startReceiver(status: () => number): Promise<{ server: Server; url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      received.push({ headers: request.headers, body });
      response.writeHead(status()).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
}

function verified(delivery: Received): Record<string, string> {
  const signature = String(delivery.headers['x-webhook-signature']);
  const [, timestamp, mac] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(signature) ?? [];
  expect(mac).toBe(createHmac('sha256', SECRET).update(`${timestamp}.${delivery.body}`).digest('hex'));
  return JSON.parse(delivery.body) as Record<string, string>;
}

async function until<T>(read: () => T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe.each(['workers', 'node'] as EdgeRuntime[])('owner webhooks on the %s edge', (runtime) => {
  let stack: LocalStack;
  let site: FixtureServer;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let answer = 200;

  beforeAll(async () => {
    site = await startFixtureServer();
    receiver = await startReceiver(() => answer);
    stack = await startLocalStack({ runtime, database: 'fresh', headless: true });
  });

  afterAll(async () => {
    await stack?.stop();
    await site?.close();
    receiver?.server.close();
  });

  it('posts a signed "approval needed" and, after one failure and a retry, "run ended"', async () => {
    const ownerId = LOCAL_OWNER_ID;
    const set = await fetch(`${stack.edgeUrl}/v1/owners/${ownerId}/webhook`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${stack.tokens.operator}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, secret: SECRET }),
    });
    expect(set.status).toBe(200);
    expect(await set.json()).not.toHaveProperty('secret');
    const owner = new ApiClient(stack.edgeUrl, stack.tokens.owner);
    const agent = new ApiClient(stack.edgeUrl, stack.tokens.agent);
    const run = await owner.createRun({ profile_id: `webhooks-${runtime}`, intent: 'Save the draft', origins: [site.origin] });
    const opened = observationOf((await agent.propose(run.id, 'browser.navigate', { url: site.url('postconditions/toast.html') }, '1.4.0')).body);
    const parked = await agent.propose(
      run.id,
      'browser.act',
      { action: 'click', revision: opened.revision, reference: refOf(opened.snapshot, 'button', 'Save draft') },
      '1.4.0',
    );
    const asked = verified(
      await until(() => receiver.received.find((delivery) => delivery.headers['x-webhook-event'] === 'approval_needed'), 'approval_needed'),
    );
    expect(asked).toMatchObject({
      event: 'approval_needed',
      owner_id: ownerId,
      run_id: run.id,
      approval_id: parked.body.approval_id,
      console_url: `${stack.edgeUrl}/console`,
    });
    // Ids and states only: what the act would type or which page it is on stays in the console.
    expect(asked).not.toHaveProperty('summary');

    await owner.decide(parked.body.approval_id!, 'approve');
    answer = 500;
    await agent.report(run.id, 'completed', 'saved');
    await until(() => receiver.received.find((delivery) => delivery.headers['x-webhook-event'] === 'run_ended'), 'the first run_ended attempt');
    const [[outbox]] = (await stack.queryD1("SELECT attempts, last_error, next_attempt_at FROM webhook_deliveries WHERE event = 'run_ended'")) as [
      [Record<string, unknown>],
    ];
    expect(outbox).toMatchObject({ attempts: 1, last_error: 'HTTP 500' });
    expect(Number(outbox.next_attempt_at)).toBeGreaterThan(Date.now());

    // Due now: the next cron pass retries it, and this time the receiver takes it.
    answer = 200;
    await stack.queryD1("UPDATE webhook_deliveries SET next_attempt_at = 1 WHERE event = 'run_ended'");
    await stack.triggerCron();
    const ended = await until(() => {
      const attempts = receiver.received.filter((delivery) => delivery.headers['x-webhook-event'] === 'run_ended');
      return attempts.length >= 2 ? attempts[1] : undefined;
    }, 'the retried run_ended');
    expect(verified(ended)).toMatchObject({ event: 'run_ended', run_id: run.id, state: 'completed' });
    const [[delivered]] = (await stack.queryD1("SELECT attempts, delivered_at FROM webhook_deliveries WHERE event = 'run_ended'")) as [
      [Record<string, unknown>],
    ];
    expect(delivered.attempts).toBe(2);
    expect(delivered.delivered_at).not.toBeNull();
  });
});
