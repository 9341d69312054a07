import { describe, expect, it } from 'vitest';
import { RevisionLedger } from '../../browser-host/snapshot/captured-revision.ts';

const capture = {
  url: 'http://127.0.0.1/',
  title: 'Page',
  lines: ['- button "Go" [ref=e1]'],
  frames: [],
  incomplete: [],
  settle: { outcome: 'not_waited', elapsed_ms: 0, pending_at_entry: 0, overflow: false },
} as const;

describe('the revision ledger of a driven page', () => {
  it('continues from the first revision, so a relaunched profile never reuses a number', () => {
    const ledger = new RevisionLedger(7);
    expect(ledger.current).toBe(7);
    expect(ledger.latest).toBeUndefined();
    expect(ledger.record(capture).revision).toBe(8);
    expect(ledger.record(capture).revision).toBe(9);
    expect(ledger.latest?.revision).toBe(9);
  });

  it('keeps an invalidation until the next full capture clears it', () => {
    const ledger = new RevisionLedger(0);
    ledger.record(capture);
    ledger.invalidate('a capture failed: timeout');
    expect(ledger.invalidation).toBe('a capture failed: timeout');
    expect(ledger.current).toBe(1);
    ledger.record(capture);
    expect(ledger.invalidation).toBeUndefined();
    expect(ledger.current).toBe(2);
  });
});
