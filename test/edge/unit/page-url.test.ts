import { describe, expect, it } from 'vitest';
import { canonicalPageUrl, MAX_SHOWN_URLS, navigationHref, shownUrlsOf } from '../../../shared/page-url.ts';

describe('canonicalPageUrl', () => {
  it('is one URL however it is written: scheme and host case, default port, empty query, fragment', () => {
    for (const written of ['HTTP://Example.COM/t', 'http://example.com:80/t', 'http://example.com/t?', 'http://example.com/t#x', ' http://example.com/t?#y ']) {
      expect(canonicalPageUrl(written), written).toBe('http://example.com/t');
    }
    expect(canonicalPageUrl('/t', 'http://example.com/page')).toBe('http://example.com/t');
  });

  it('keeps what tells documents apart: path case and a real query', () => {
    expect(canonicalPageUrl('http://example.com/T?q=1')).toBe('http://example.com/T?q=1');
  });

  it('is undefined for what is not an http(s) URL', () => {
    for (const written of ['javascript:alert(1)', 'data:text/html,x', 'not a url', '/relative-without-base'])
      expect(canonicalPageUrl(written), written).toBeUndefined();
  });
});

describe('navigationHref', () => {
  it('keeps the fragment and drops an empty query', () => {
    expect(navigationHref('HTTP://example.com/t?#x')).toBe('http://example.com/t#x');
  });
});

describe('shownUrlsOf', () => {
  it('reads link targets (quoted or not, resolved against the page) and absolute URLs in text, never the page itself', () => {
    const shown = shownUrlsOf({
      url: 'http://a.example/page',
      snapshot: [
        '- link "Next" [ref=e1]:',
        '  - /url: /next',
        '- link "Odd" [ref=e2]:',
        '  - /url: "/q?x=1#frag: y"',
        '- link "Self" [ref=e3]:',
        '  - /url: /page#top',
        '- paragraph [ref=e4]: "Write to https://b.example/form?id=7."',
      ].join('\n'),
    });
    expect(shown.sort()).toEqual(['http://a.example/next', 'http://a.example/q?x=1', 'https://b.example/form?id=7']);
  });

  it(`records at most ${MAX_SHOWN_URLS} URLs`, () => {
    const snapshot = Array.from({ length: MAX_SHOWN_URLS + 50 }, (_, index) => `- text: https://c.example/${index}`).join('\n');
    expect(shownUrlsOf({ url: 'http://a.example/', snapshot })).toHaveLength(MAX_SHOWN_URLS);
  });
});
