import type { HostConnector, HostSession } from '../host/host-session.ts';

/**
 * Where one request's time goes, for the benchmarks and for operators who ask for it
 * (`D1_STATEMENT_COUNTER=1`, which also answers `X-D1-Statements`): D1 statements (`d1`, each
 * statement of a batch counted, the batch timed once), the host connection (`upgrade`: the
 * WebSocket upgrade; `hello`: waiting for and verifying the host's signed hello) and each wire
 * call by method (`host.lease.acquire`, `host.page.observe`, ...). Answered as a `Server-Timing`
 * header, durations in ms; `app` is the rest of the request (validation, policy, JSON).
 * Measuring changes nothing about what is sent.
 */
export class RequestProfile {
  readonly #started = performance.now();
  readonly #spans = new Map<string, { count: number; ms: number }>();

  /** Adds `ms` (and `count` occurrences) to span `name`. */
  add(name: string, ms: number, count = 1): void {
    const span = this.#spans.get(name) ?? { count: 0, ms: 0 };
    span.count += count;
    span.ms += ms;
    this.#spans.set(name, span);
  }

  /** Runs `work`, adding its duration (success or failure) to span `name`. */
  async time<T>(name: string, work: () => Promise<T>, count = 1): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.add(name, performance.now() - started, count);
    }
  }

  /**
   * The `Server-Timing` value: every span as `name;dur=ms;desc="count"`, then `app` (the request's
   * time not in any span: connection waits overlap nothing else, so the spans add up) and `total`.
   */
  serverTiming(): string {
    const total = performance.now() - this.#started;
    let inSpans = 0;
    const parts: string[] = [];
    for (const [name, span] of this.#spans) {
      inSpans += span.ms;
      parts.push(`${name};dur=${span.ms.toFixed(1)};desc="${span.count}"`);
    }
    parts.push(`app;dur=${Math.max(0, total - inSpans).toFixed(1)}`, `total;dur=${total.toFixed(1)}`);
    return parts.join(', ');
  }
}

/**
 * `connector` with each wire call of its sessions timed into `profile` as `host.<method>` (the
 * connector itself times its upgrade and hello; see edge/host/fetch-upgrade-connector.ts).
 */
export function profiledConnector(connector: HostConnector, profile: RequestProfile): HostConnector {
  return {
    async connect(timeoutMs) {
      return profiledSession(await connector.connect(timeoutMs), profile);
    },
  };
}

function profiledSession(session: HostSession, profile: RequestProfile): HostSession {
  return new Proxy(session, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (property === 'call' && typeof value === 'function') {
        return (method: string, ...rest: unknown[]) =>
          profile.time(`host.${method}`, () => (value as (...args: unknown[]) => Promise<unknown>).apply(target, [method, ...rest]));
      }
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
