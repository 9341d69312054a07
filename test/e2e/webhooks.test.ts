import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import { LOCAL_OWNER_ID } from '../../scripts/local-stack.ts';
import { stackTestPerRuntime } from '../support/stack-fixture.ts';
import { until } from '../support/until.ts';

// Owner webhooks from the real edge (wrangler dev, and Node) to a loopback receiver: "approval
// needed" and "run ended" arrive signed; a delivery that fails is retried by the cron pass once it
// is due.

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

/** How long a delivery may take to arrive, and how often the receiver is looked at. */
const DELIVERY_MS = 20_000;
const LOOK_EVERY_MS = 200;

const RUNTIMES = ['workers', 'node'] as const;
const webhooksTest = stackTestPerRuntime(RUNTIMES, { headless: true });

describe.each(RUNTIMES)('owner webhooks on the %s edge', (runtime) => {
  const it = webhooksTest(runtime);
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let answer = 200;

  beforeAll(async () => {
    receiver = await startReceiver(() => answer);
  });

  afterAll(() => {
    receiver?.server.close();
  });

  it('posts a signed "approval needed" and, after one failure and a retry, "run ended"', async ({ stack, site, agent, owner }) => {
    const ownerId = LOCAL_OWNER_ID;
    const set = await fetch(`${stack.edgeUrl}/v1/owners/${ownerId}/webhook`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${stack.tokens.operator}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, secret: SECRET }),
    });
    expect(set.status).toBe(200);
    expect(await set.json()).not.toHaveProperty('secret');
    const run = await owner.createRun({ profile_id: `webhooks-${runtime}`, intent: 'Save the draft', origins: [site.origin] });
    const opened = observationOf((await agent.propose(run.id, 'browser.navigate', { url: site.url('postconditions/toast.html') }, '1.4.0')).body);
    const parked = await agent.propose(
      run.id,
      'browser.act',
      { action: 'click', revision: opened.revision, reference: refOf(opened.snapshot, 'button', 'Save draft') },
      '1.4.0',
    );
    const asked = verified(
      await until(
        () => receiver.received.find((delivery) => delivery.headers['x-webhook-event'] === 'approval_needed'),
        'approval_needed',
        DELIVERY_MS,
        LOOK_EVERY_MS,
      ),
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
    await until(
      () => receiver.received.find((delivery) => delivery.headers['x-webhook-event'] === 'run_ended'),
      'the first run_ended attempt',
      DELIVERY_MS,
      LOOK_EVERY_MS,
    );
    const [[outbox]] = (await stack.queryD1("SELECT attempts, last_error, next_attempt_at FROM webhook_deliveries WHERE event = 'run_ended'")) as [
      [Record<string, unknown>],
    ];
    expect(outbox).toMatchObject({ attempts: 1, last_error: 'HTTP 500' });
    expect(Number(outbox.next_attempt_at)).toBeGreaterThan(Date.now());

    // Due now: the next cron pass retries it, and this time the receiver takes it.
    answer = 200;
    await stack.queryD1("UPDATE webhook_deliveries SET next_attempt_at = 1 WHERE event = 'run_ended'");
    await stack.triggerCron();
    const ended = await until(
      () => {
        const attempts = receiver.received.filter((delivery) => delivery.headers['x-webhook-event'] === 'run_ended');
        return attempts.length >= 2 ? attempts[1] : undefined;
      },
      'the retried run_ended',
      DELIVERY_MS,
      LOOK_EVERY_MS,
    );
    expect(verified(ended)).toMatchObject({ event: 'run_ended', run_id: run.id, state: 'completed' });
    const [[delivered]] = (await stack.queryD1("SELECT attempts, delivered_at FROM webhook_deliveries WHERE event = 'run_ended'")) as [
      [Record<string, unknown>],
    ];
    expect(delivered.attempts).toBe(2);
    expect(delivered.delivered_at).not.toBeNull();
  });
});
