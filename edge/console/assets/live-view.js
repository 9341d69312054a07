// The live view's script, served from the edge as a static file (/console/assets/live-view.js):
// opens the view's socket with the viewer's size, draws each frame and acknowledges it once drawn
// (so the host never sends more than two ahead), and sends the person's pointer, wheel and keyboard
// input aimed at the frame on screen. Keys go as key presses; an input method's composition and a
// paste go as inserted text. Nothing typed is kept.
(() => {
  const view = document.getElementById('live-view');
  if (!view) return;
  const frame = document.getElementById('live-frame');
  const keys = document.getElementById('live-keys');
  const status = document.getElementById('live-status');
  const notice = document.getElementById('live-notice');
  const ratio = window.devicePixelRatio || 1;
  const width = Math.max(64, Math.min(4096, Math.round(view.clientWidth * ratio)));
  const height = Math.max(64, Math.min(4096, Math.round(window.innerHeight * 0.8 * ratio)));
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const socket = new WebSocket(`${scheme}//${location.host}${view.dataset.socket}?w=${width}&h=${height}`);
  let shown = { seq: 0, width: 0, height: 0 };
  let next;
  const say = (text, state) => {
    status.textContent = text;
    view.dataset.state = state;
  };
  const send = (message) => {
    if (socket.readyState === 1) socket.send(JSON.stringify(message));
  };
  const input = (events) => {
    if (shown.seq > 0 && view.dataset.state === 'live') send({ type: 'input', frame_seq: shown.seq, events });
  };
  socket.addEventListener('message', (event) => {
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      return;
    }
    if (message.type === 'frame') {
      next = message;
      frame.src = `data:image/jpeg;base64,${message.jpeg_base64}`;
    } else if (message.type === 'ended') {
      say(`The live view ended: ${message.message}.`, 'ended');
    } else if (message.type === 'notice') {
      // What the window refused while the person signs in (an address, an origin, a new window).
      notice.textContent = message.message;
      notice.hidden = false;
    }
  });
  socket.addEventListener('open', () => send({ type: 'hello' }));
  socket.addEventListener('close', () => {
    if (view.dataset.state !== 'ended') say('The live view ended: the connection closed.', 'ended');
  });
  frame.addEventListener('load', () => {
    if (!next) return;
    shown = { seq: next.seq, width: next.width, height: next.height };
    next = undefined;
    if (view.dataset.state === 'connecting')
      say('Live: you are using the sign-in window. Click into it or use the keyboard; the agent waits until you are done.', 'live');
    send({ type: 'ack', seq: shown.seq });
  });
  const at = (event) => {
    const box = frame.getBoundingClientRect();
    const x = ((event.clientX - box.left) / box.width) * shown.width;
    const y = ((event.clientY - box.top) / box.height) * shown.height;
    return { x: Math.max(0, Math.min(shown.width, x)), y: Math.max(0, Math.min(shown.height, y)) };
  };
  const BUTTONS = ['left', 'middle', 'right'];
  frame.addEventListener('pointerdown', (event) => {
    event.preventDefault();
    keys.focus();
    input([{ type: 'mouse', action: 'down', ...at(event), button: BUTTONS[event.button] || 'left', click_count: Math.max(1, Math.min(3, event.detail || 1)) }]);
  });
  frame.addEventListener('pointerup', (event) => {
    event.preventDefault();
    input([{ type: 'mouse', action: 'up', ...at(event), button: BUTTONS[event.button] || 'left', click_count: Math.max(1, Math.min(3, event.detail || 1)) }]);
  });
  let lastMove = 0;
  frame.addEventListener('pointermove', (event) => {
    const now = performance.now();
    if (now - lastMove < 50) return;
    lastMove = now;
    input([{ type: 'mouse', action: 'move', ...at(event) }]);
  });
  frame.addEventListener(
    'wheel',
    (event) => {
      event.preventDefault();
      input([{ type: 'wheel', ...at(event), delta_x: event.deltaX, delta_y: event.deltaY }]);
    },
    { passive: false },
  );
  frame.addEventListener('contextmenu', (event) => event.preventDefault());
  const pasting = (event) => (event.ctrlKey || event.metaKey) && (event.key === 'v' || event.key === 'V');
  keys.addEventListener('keydown', (event) => {
    if (event.isComposing || event.key === 'Process' || event.key === 'Unidentified' || pasting(event)) return;
    event.preventDefault();
    input([{ type: 'key', action: 'down', key: event.key }]);
  });
  keys.addEventListener('keyup', (event) => {
    if (event.isComposing || event.key === 'Process' || event.key === 'Unidentified' || pasting(event)) return;
    event.preventDefault();
    input([{ type: 'key', action: 'up', key: event.key }]);
  });
  let composing = false;
  keys.addEventListener('compositionstart', () => {
    composing = true;
  });
  keys.addEventListener('compositionend', (event) => {
    composing = false;
    if (event.data) input([{ type: 'text', text: event.data }]);
    keys.value = '';
  });
  keys.addEventListener('paste', (event) => {
    event.preventDefault();
    const text = event.clipboardData ? event.clipboardData.getData('text/plain') : '';
    if (text) input([{ type: 'text', text: text.slice(0, 10000) }]);
  });
  // Whatever reaches the field itself (not a key sent as a press, not a composition) is not kept.
  keys.addEventListener('input', () => {
    if (!composing) keys.value = '';
  });
  document.getElementById('live-close').addEventListener('click', () => {
    send({ type: 'close' });
  });
  window.addEventListener('pagehide', () => socket.close());
})();
