// autocannon's setupClient for its worker thread (a worker can only load a CommonJS file):
// every connection speaks for its own account, as different customers of one server would.
// The keys come from BENCH_API_KEYS (comma-separated), set by bench/scenarios/http.ts.
const keys = (process.env.BENCH_API_KEYS || 'acct-0').split(',');
let connections = 0;
module.exports = function setupClient(client) {
  client.setHeaders({ 'x-api-key': keys[connections++ % keys.length] });
};
