import { describe, expect, it } from 'vitest';
import { ANY_URL_SHOWN, canonicalPageUrl, MAX_SHOWN_URLS, navigationHref, shownUrlsOf } from '../../../shared/page-url.ts';

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
    // Trailing punctuation may belong to the sentence or to the URL: both are recorded.
    expect(shown.sort()).toEqual(['http://a.example/next', 'http://a.example/q?x=1', 'https://b.example/form?id=7', 'https://b.example/form?id=7.']);
  });

  it(`records at most ${MAX_SHOWN_URLS} URLs, then says that any URL may have been shown`, () => {
    const snapshot = Array.from({ length: MAX_SHOWN_URLS + 50 }, (_, index) => `- text: https://c.example/${index}`).join('\n');
    const shown = shownUrlsOf({ url: 'http://a.example/', snapshot });
    expect(shown).toHaveLength(MAX_SHOWN_URLS + 1);
    expect(shown.at(-1)).toBe(ANY_URL_SHOWN);
  });

  it('reads what Chromium would follow: control characters, backslashes, missing slashes, parentheses, escapes, percent-encoding', () => {
    const shown = shownUrlsOf({
      url: 'http://a.example/page',
      snapshot: [
        '- link "Tab" [ref=e1]:',
        '  - /url: "\\x0bhttps://evil.example/ctl"',
        '- text: see https:\\\\evil.example\\back and https:/evil.example/one-slash.',
        '- text: "https://evil.example/wiki/Foo_(bar)"',
        '- text: https://evil.example/%7Etilde!',
      ].join('\n'),
    });
    for (const url of [
      'https://evil.example/ctl',
      'https://evil.example/back',
      'https://evil.example/one-slash',
      'https://evil.example/wiki/Foo_(bar)',
      'https://evil.example/~tilde',
    ]) {
      expect(shown, url).toContain(url);
    }
  });

  it("resolves a relative link against the page and against each frame's origin", () => {
    const shown = shownUrlsOf({
      url: 'http://a.example/page',
      snapshot: '- iframe [ref=e1]:\n  - link "In frame" [ref=f1e1]:\n    - /url: /inner',
      frames: [{ origin: 'http://widgets.example' }],
    });
    expect(shown).toEqual(expect.arrayContaining(['http://a.example/inner', 'http://widgets.example/inner']));
  });
});
