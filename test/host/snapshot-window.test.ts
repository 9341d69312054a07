import { describe, expect, test } from 'vitest';
import { ContinuationCursors } from '../../browser-host/continuation-cursor.ts';
import { HostError } from '../../browser-host/host-error.ts';
import { sliceWindow } from '../../browser-host/snapshot/window.ts';

const lines = Array.from({ length: 10 }, (_, i) => `- listitem [ref=e${i + 1}]: Item ${i + 1}`);

describe('observation windows', () => {
  test('the node cap cuts a window after that many lines', () => {
    expect(sliceWindow(lines, 0, { maxNodes: 4, maxBytes: 10_000 })).toEqual({
      start: 0,
      end: 4,
      total: 10,
      text: lines.slice(0, 4).join('\n'),
      truncated: true,
    });
    expect(sliceWindow(lines, 8, { maxNodes: 4, maxBytes: 10_000 })).toMatchObject({ start: 8, end: 10, truncated: false });
  });

  test('the byte cap cuts a window at a whole line and never splits one', () => {
    const lineBytes = Buffer.byteLength(lines[0] ?? '');
    const window = sliceWindow(lines, 0, { maxNodes: 100, maxBytes: lineBytes * 3 + 2 });
    expect(window).toMatchObject({ start: 0, end: 3, truncated: true });
    expect(Buffer.byteLength(window.text)).toBeLessThanOrEqual(lineBytes * 3 + 2);
    // A single line over the cap still makes progress, whole.
    expect(sliceWindow(lines, 5, { maxNodes: 100, maxBytes: 5 })).toMatchObject({ start: 5, end: 6, text: lines[5] });
  });

  test('bytes are counted in UTF-8', () => {
    const wide = ['ééééé', 'ééééé', 'ééééé'];
    expect(sliceWindow(wide, 0, { maxNodes: 100, maxBytes: 21 })).toMatchObject({ end: 2 });
  });
});

describe('continuation cursors', () => {
  const cursors = new ContinuationCursors('cursor-secret-of-at-least-32-bytes!!');

  test('a sealed cursor opens to its position and stays within the contract length', () => {
    const cursor = cursors.seal({ leaseId: `lease_${'a'.repeat(64)}`, revision: Number.MAX_SAFE_INTEGER, start: 123_456 });
    expect(cursor.length).toBeLessThanOrEqual(512);
    expect(cursors.open(cursor)).toEqual({ leaseId: `lease_${'a'.repeat(64)}`, revision: Number.MAX_SAFE_INTEGER, start: 123_456 });
  });

  test('a cursor sealed with another secret, altered or undecodable is invalid_params', () => {
    const other = new ContinuationCursors('another-secret-of-at-least-32-bytes!').seal({ leaseId: 'lease_abcdefgh', revision: 1, start: 4 });
    for (const forged of [other, 'x', 'a.b.c', `${other}x`]) {
      expect(() => cursors.open(forged)).toThrow(HostError);
      try {
        cursors.open(forged);
      } catch (error) {
        expect((error as HostError).code).toBe('invalid_params');
      }
    }
  });
});
