import type { RequestProfile } from '../metrics/request-profile.ts';

/**
 * Counts the D1 statements one request sends, for the decision-cost benchmark and for operators
 * who want to see it (`X-D1-Statements`, only when `D1_STATEMENT_COUNTER=1`). A batch counts
 * each of its statements. It also counts round trips (`X-D1-Round-Trips`): a statement run alone
 * is one, a whole batch is one. A round trip, not a statement, is what costs time: on `wrangler
 * dev`'s local D1 a batch of four takes as long as one statement, about 3.5 ms (issue 35). It
 * wraps the binding; it changes nothing about what is sent.
 */
export interface StatementCounter {
  readonly db: D1Database;
  /** Statements sent through `db` so far. */
  count(): number;
  /** Round trips to D1 so far: each statement run alone, and each batch, counts one. */
  roundTrips(): number;
}

/**
 * Wraps a D1 binding so that every executed statement is counted and, when `profile` is given,
 * timed into its `d1` span (a batch is timed once and counts each of its statements).
 */
export function countStatements(db: D1Database, profile?: RequestProfile): StatementCounter {
  let count = 0;
  let roundTrips = 0;
  // The binding's batch needs its own statement objects, not proxies of them.
  const originals = new WeakMap<object, D1PreparedStatement>();
  const countingStatement = (statement: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (typeof value !== 'function') return value;
        if (property === 'bind') return (...args: unknown[]) => countingStatement((value as (...a: unknown[]) => D1PreparedStatement).apply(target, args));
        if (property === 'run' || property === 'all' || property === 'first' || property === 'raw') {
          return (...args: unknown[]) => {
            count++;
            roundTrips++;
            const started = performance.now();
            const answer = (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            return profile ? answer.finally(() => profile.add('d1', performance.now() - started)) : answer;
          };
        }
        return (value as (...a: unknown[]) => unknown).bind(target);
      },
    });
    originals.set(proxy, statement);
    return proxy;
  };
  const wrapped = new Proxy(db, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (property === 'prepare') return (sql: string) => countingStatement(target.prepare(sql));
      if (property === 'batch') {
        return (statements: D1PreparedStatement[]) => {
          count += statements.length;
          roundTrips++;
          const started = performance.now();
          const answer = target.batch(statements.map((statement) => originals.get(statement) ?? statement));
          return profile ? answer.finally(() => profile.add('d1', performance.now() - started, statements.length)) : answer;
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  return { db: wrapped, count: () => count, roundTrips: () => roundTrips };
}
