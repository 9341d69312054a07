import type { WindowCaps } from '../config.ts';

/** A contiguous run of snapshot lines: `[start, end)` of `total`, joined with newlines. */
export interface SnapshotWindow {
  readonly start: number;
  readonly end: number;
  readonly total: number;
  readonly text: string;
  /** True when lines remain after `end`. */
  readonly truncated: boolean;
}

/**
 * The window of `lines` that begins at line `start` and holds as many whole lines as fit in
 * `caps.maxNodes` lines and `caps.maxBytes` UTF-8 bytes of text (newlines included). A line is
 * never split, so a window always holds at least one line even if that line alone is over the
 * byte cap; expansion beyond the window is never implicit (DESIGN.md section 6).
 * `start` must be within `[0, lines.length]`; at `lines.length` the window is empty.
 */
export function sliceWindow(lines: readonly string[], start: number, caps: WindowCaps): SnapshotWindow {
  let end = start;
  let bytes = 0;
  while (end < lines.length && end - start < caps.maxNodes) {
    const lineBytes = Buffer.byteLength(lines[end] ?? '', 'utf8') + (end > start ? 1 : 0);
    if (end > start && bytes + lineBytes > caps.maxBytes) break;
    bytes += lineBytes;
    end += 1;
  }
  return { start, end, total: lines.length, text: lines.slice(start, end).join('\n'), truncated: end < lines.length };
}
