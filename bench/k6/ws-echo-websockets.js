// WebSocket echo for bench/protocols.sh, with k6/experimental/websockets: the module k6's docs
// recommend over k6/ws (a global event loop; it becomes k6/websockets in later k6 releases).
// The same shape as loadhost's ws-echo plugin: each VU opens ONE connection and, until the
// scenario's DURATION is over, sends a text message, waits for its echo, checks it, sends the
// next. Env: TARGET_URL (ws://127.0.0.1:PORT/ws/echo), VUS, DURATION (10s); messages are counted
// by k6's own ws_msgs_sent / ws_msgs_received.
import { WebSocket } from 'k6/experimental/websockets';
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
    const ws = new WebSocket(URL);
    let k = 0;
    let sent = '';
    const next = () => {
        sent = `v${exec.vu.idInTest}-i${exec.vu.iterationInScenario}-m${k++}`;
        ws.send(sent);
    };
    // A bound of its own: an echo that never comes does not keep the VU past DURATION + 5 s.
    const guard = setTimeout(() => ws.close(), Math.max(0, end - Date.now()) + GRACE_MS);
    ws.onopen = () => next();
    ws.onmessage = (e) => {
        check(e.data, { 'echo matches': (d) => d === sent });
        if (Date.now() < end) {
            next();
        } else {
            clearTimeout(guard);
            ws.close();
        }
    };
    ws.onerror = (e) => {
        clearTimeout(guard);
        console.error(`ws error: ${e.error}`);
        ws.close();
    };
}
