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
  /** Spans inside others (the host's phases within its wire call): printed, not taken from `app`. */
  readonly #nested = new Map<string, number>();

  /** Adds `ms` (and `count` occurrences) to span `name`. */
  add(name: string, ms: number, count = 1): void {
    const span = this.#spans.get(name) ?? { count: 0, ms: 0 };
    span.count += count;
    span.ms += ms;
    this.#spans.set(name, span);
  }

  /** Adds `ms` to nested span `name`, one that lies inside another span (see `serverTiming`). */
  addNested(name: string, ms: number): void {
    this.#nested.set(name, (this.#nested.get(name) ?? 0) + ms);
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
   * The `Server-Timing` value: every span as `name;dur=ms;desc="count"`, then the nested spans as
   * `name;dur=ms` (within the spans before them), then `app` (the request's time not in any span:
   * connection waits overlap nothing else, so the spans add up, except a lease renewal sent with its
   * command, edge/pipeline/lease.ts: its `host.lease.renew` lies within the command's span, so
   * `app` comes out that much too low) and `total`.
   */
  serverTiming(): string {
    const total = performance.now() - this.#started;
    let inSpans = 0;
    const parts: string[] = [];
    for (const [name, span] of this.#spans) {
      inSpans += span.ms;
      parts.push(`${name};dur=${span.ms.toFixed(1)};desc="${span.count}"`);
    }
    for (const [name, ms] of this.#nested) parts.push(`${name};dur=${ms.toFixed(1)}`);
    parts.push(`app;dur=${Math.max(0, total - inSpans).toFixed(1)}`, `total;dur=${total.toFixed(1)}`);
    return parts.join(', ');
  }
}

/**
 * `connector` with each wire call of its sessions timed into `profile` as `host.<method>`, and the
 * phases the host reported for it as nested spans `phase.<phase>` (the connector itself times its
 * upgrade and hello; see edge/host/fetch-upgrade-connector.ts).
 */
export function profiledConnector(connector: HostConnector, profile: RequestProfile): HostConnector {
  return {
    async connect(timeoutMs) {
      const session = await connector.connect(timeoutMs);
      session.onTimings((_method, timings) => {
        for (const [phase, ms] of Object.entries(timings)) profile.addNested(`phase.${phase}`, ms);
      });
      return profiledSession(session, profile);
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
