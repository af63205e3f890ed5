// WebSocket echo for bench/protocols.sh, with k6/ws (k6's first WebSocket module, the one issue
// 19 names; each connect() runs a local event loop that blocks the VU until the socket closes).
// The same shape as loadhost's ws-echo plugin: each VU opens ONE connection and, until the
// scenario's DURATION is over, sends a text message, waits for its echo, checks it, sends the
// next. Env: TARGET_URL (ws://127.0.0.1:PORT/ws/echo), VUS, DURATION (10s); messages are counted
// by k6's own ws_msgs_sent / ws_msgs_received.
import ws from 'k6/ws';
import { check, sleep } from 'k6';
import exec from 'k6/execution';

const URL = __ENV.TARGET_URL;
const DURATION = __ENV.DURATION || '10s';
const GRACE_MS = 5000;

function millis(d) {
    const m = /^(\d+)(ms|s|m)$/.exec(d);
    if (!m) throw new Error(`DURATION must look like 500ms, 10s or 1m, not ${d}`);
    return Number(m[1]) * { ms: 1, s: 1000, m: 60000 }[m[2]];
}

export const options = {
    scenarios: {
        echo: { executor: 'constant-vus', vus: Number(__ENV.VUS || 16), duration: DURATION, gracefulStop: '5s' },
    },
};

export default function () {
    const end = exec.scenario.startTime + millis(DURATION);
    // The one connection lasts the whole scenario; an iteration that would start at its very end
    // (k6 starts the next one as soon as the previous returns) waits it out instead of connecting.
    if (Date.now() >= end) {
        sleep(0.1);
        return;
    }
    const res = ws.connect(URL, null, (socket) => {
        let k = 0;
        let sent = '';
        const next = () => {
            sent = `v${exec.vu.idInTest}-i${exec.vu.iterationInScenario}-m${k++}`;
            socket.send(sent);
        };
        socket.on('open', () => next());
        socket.on('message', (data) => {
            check(data, { 'echo matches': (d) => d === sent });
            if (Date.now() < end) next(); else socket.close();
        });
        socket.on('error', (e) => {
            console.error(`ws error: ${e.error()}`);
            socket.close();
        });
        // A bound of its own: an echo that never comes does not keep the VU past DURATION + 5 s.
        socket.setTimeout(() => socket.close(), Math.max(0, end - Date.now()) + GRACE_MS);
    });
    check(res, { 'ws handshake 101': (r) => r && r.status === 101 });
}
