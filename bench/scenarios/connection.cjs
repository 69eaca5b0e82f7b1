// autocannon's setupClient for its worker thread (a worker can only load a CommonJS file):
// every connection speaks for its own account, as different customers of one server would.
let connections = 0;
module.exports = function setupClient(client) {
  client.setHeaders({ "x-api-key": `acct-${connections++ % 1000}` });
};
