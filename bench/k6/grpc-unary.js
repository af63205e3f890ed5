// gRPC unary echo for bench/protocols.sh, with k6/net/grpc: each VU connects ONCE (plaintext h2c,
// on its first iteration) and keeps the connection, then each iteration is one call of
// /loadhost.target.Echo/Unary (echo.proto, next to this file) with its echo checked, as
// loadhost's grpc-echo plugin does per task. Env: TARGET_URL (http://127.0.0.1:PORT, the plugin's
// option), VUS, DURATION (10s); calls are counted by k6's own grpc_reqs.
import grpc from 'k6/net/grpc';
import { check } from 'k6';
import exec from 'k6/execution';

// k6's client takes HOST:PORT, without the scheme.
const ADDRESS = (__ENV.TARGET_URL || '').replace(/^https?:\/\//, '');
const client = new grpc.Client();
client.load([], 'echo.proto');

export const options = {
    scenarios: {
        unary: {
            executor: 'constant-vus', vus: Number(__ENV.VUS || 16), duration: __ENV.DURATION || '10s',
            gracefulStop: '5s',
        },
    },
};

export default function () {
    if (exec.vu.iterationInScenario === 0) {
        client.connect(ADDRESS, { plaintext: true, timeout: '10s' });
    }
    const text = `v${exec.vu.idInTest}-i${exec.vu.iterationInScenario}`;
    const res = client.invoke('loadhost.target.Echo/Unary', { message: text }, { timeout: '10s' });
    check(res, {
        'echo matches': (r) => r && r.status === grpc.StatusOK && r.message && r.message.message === text,
    });
}
