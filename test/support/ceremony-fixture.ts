import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { expect, test, vi } from 'vitest';
import type { HostConfig } from '../../browser-host/config.ts';
import { type BrowserHost, startBrowserHost } from '../../browser-host/host.ts';
import { type AccountSite, accountSiteDefinition, startAccountSite } from '../../scripts/account-site.ts';
import { signInAsPerson } from '../../scripts/person-at-browser.ts';
import { type CeremonyEventClaims, type CeremonyState, verifyCeremonyEvent } from '../../shared/authentication.ts';
import type { HostResult } from '../../shared/protocol.ts';
import { connectHost, type HostClient } from './host-client.ts';
import { TEST_SECRET, temporaryDirectory, testHostConfig } from './host-fixture.ts';

type CeremonyAnswer = HostResult<'ceremony.begin'>;

/** A stand-in for the edge's `POST /v1/host/ceremony-events`: it keeps what it receives. */
export interface EventReceiver {
  /** Base URL, as `HOST_EDGE_URL`. */
  readonly url: string;
  /** Claims of every delivered event whose token `verifyCeremonyEvent` accepted, in arrival order. */
  events(): CeremonyEventClaims[];
  /** Deliveries that did not verify (bad token, bad body, wrong path). */
  rejected(): number;
  close(): Promise<void>;
}

/** Starts an event receiver on 127.0.0.1 that checks each token with `secret` and answers 204 (400 when it does not verify). */
export async function startEventReceiver(secret: string): Promise<EventReceiver> {
  const events: CeremonyEventClaims[] = [];
  let rejected = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      void (async () => {
        let claims: CeremonyEventClaims | undefined;
        if (request.method === 'POST' && request.url === '/v1/host/ceremony-events' && request.headers['content-type'] === 'application/json') {
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { event?: unknown };
            if (typeof body.event === 'string' && Object.keys(body).length === 1) claims = await verifyCeremonyEvent(secret, body.event);
          } catch {
            claims = undefined;
          }
        }
        if (claims === undefined) rejected += 1;
        else events.push(claims);
        response.writeHead(claims === undefined ? 400 : 204).end();
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    events: () => [...events],
    rejected: () => rejected,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What a ceremony test file runs against. */
export interface CeremonyWorld {
  readonly site: AccountSite;
  readonly receiver: EventReceiver;
  readonly host: BrowserHost;
  /** The host's `HOST_PROFILES_DIR`. */
  readonly profilesDir: string;
}

/**
 * The ceremony-test API: `test` with
 * - `world` (file): the account site, an event receiver, and a host (headless unless
 *   `overrides` say otherwise) with person debugging on, 200 ms surface polls, the receiver as its
 *   edge and, when `definitions` is `fixture`, the site's reviewed definition in its catalog;
 * - `client` (test): a verified wire client, closed after the test.
 */
export function ceremonyTest(definitions: 'fixture' | 'none', overrides: Partial<HostConfig> = {}) {
  return test
    .extend('world', { scope: 'file' }, async ({}, { onCleanup }): Promise<CeremonyWorld> => {
      const site = await startAccountSite();
      const receiver = await startEventReceiver(TEST_SECRET);
      const profiles = await temporaryDirectory('host-ceremony-');
      const host = await startBrowserHost(
        testHostConfig(profiles.dir, {
          siteDefinitions: definitions === 'fixture' ? [accountSiteDefinition(site.origin)] : [],
          edgeUrl: receiver.url,
          personDebugging: true,
          ceremonyPollMs: 200,
          ...overrides,
        }),
      );
      onCleanup(async () => {
        await host.close();
        await receiver.close();
        await site.close();
        await profiles.remove();
      });
      return { site, receiver, host, profilesDir: profiles.dir };
    })
    .extend('client', async ({ world }, { onCleanup }): Promise<HostClient> => {
      const client = await connectHost(world.host.url, TEST_SECRET);
      onCleanup(() => client.close());
      return client;
    });
}

/** A fresh ceremony id. */
export function ceremonyId(): string {
  return `cer_${randomBytes(9).toString('base64url')}`;
}

/** The user-data directory of a host profile (where the person finds `DevToolsActivePort`). */
export function profileDir(world: CeremonyWorld, profileId: string): string {
  return path.join(world.profilesDir, profileId);
}

/** Begins a ceremony on `profileId` for the account site: sign-in at `/signin`, protected `/reports` unless told. */
export function begin(
  client: HostClient,
  world: CeremonyWorld,
  profileId: string,
  options: { id?: string; generation?: number; timeoutMs?: number; protectedPath?: string; signInPath?: string } = {},
): Promise<CeremonyAnswer> {
  return client.call('ceremony.begin', {
    ceremony_id: options.id ?? ceremonyId(),
    profile_id: profileId,
    origin: world.site.origin,
    generation: options.generation ?? 1,
    sign_in_url: `${world.site.origin}${options.signInPath ?? '/signin'}`,
    protected_url: `${world.site.origin}${options.protectedPath ?? '/reports'}`,
    timeout_ms: options.timeoutMs ?? 30_000,
  });
}

/** Polls `ceremony.status` until its state is `state` (at most `timeoutMs`, every 100 ms); the last answer. */
export async function stateBecomes(client: HostClient, id: string, state: CeremonyState, timeoutMs = 30_000): Promise<CeremonyAnswer> {
  let last: CeremonyAnswer | undefined;
  await vi.waitFor(
    async () => {
      last = await client.call('ceremony.status', { ceremony_id: id });
      expect(last.state).toBe(state);
    },
    { timeout: timeoutMs, interval: 100 },
  );
  return last!;
}

/** The claims of an answer's event, checked with the test secret. @throws when there is no valid event. */
export async function claimsOf(answer: CeremonyAnswer): Promise<CeremonyEventClaims> {
  const claims = answer.event === undefined ? undefined : await verifyCeremonyEvent(TEST_SECRET, answer.event);
  if (claims === undefined) throw new Error(`no valid event in ${JSON.stringify(answer)}`);
  return claims;
}

/** The person at the headed browser signs in to the account site as `username` (password `<username>-pass`). */
export function personSignsIn(world: CeremonyWorld, profileId: string, username: string, password = `${username}-pass`): Promise<void> {
  return signInAsPerson({ profileDir: profileDir(world, profileId), origin: world.site.origin, username, password, timeoutMs: 20_000 });
}

/** Runs a whole ceremony in which the person signs in as `username`; resolves with its final answer (expects `verified`). */
export async function signedIn(client: HostClient, world: CeremonyWorld, profileId: string, username: string, generation = 1): Promise<CeremonyAnswer> {
  const id = ceremonyId();
  const started = await begin(client, world, profileId, { id, generation });
  if (started.state === 'verified') return started;
  await personSignsIn(world, profileId, username);
  return stateBecomes(client, id, 'verified');
}

/** Waits until the receiver holds an event for `ceremonyId` (at most `timeoutMs`); all of them. */
export async function deliveredFor(receiver: EventReceiver, id: string, timeoutMs = 10_000): Promise<CeremonyEventClaims[]> {
  await vi.waitFor(() => expect(receiver.events().some((event) => event.ceremony_id === id)).toBe(true), { timeout: timeoutMs, interval: 50 });
  return receiver.events().filter((event) => event.ceremony_id === id);
}
