// The owner console's script, served from the edge as a static file (/console/assets/console.js):
// the inbox refreshes itself every 3 s without a reload by fetching its own list (/console/inbox);
// without JavaScript the page works the same, refreshed by hand.
(() => {
  const list = document.getElementById('inbox');
  if (!list) return;
  const refresh = async () => {
    if (list.contains(document.activeElement)) return;
    try {
      const response = await fetch('/console/inbox', { credentials: 'same-origin', headers: { Accept: 'text/html' } });
      if (response.redirected || !response.ok) return;
      // Parsed as the page's own list was, so the two compare alike: only a change replaces the
      // list, and a change made before the first refresh (an approval decided elsewhere) counts.
      const fresh = document.createElement('template');
      fresh.innerHTML = await response.text();
      if (fresh.innerHTML !== list.innerHTML) list.replaceChildren(fresh.content);
    } catch {}
  };
  setInterval(refresh, 3000);
})();
