// The webhook benchmark's receiver, in a process of its own as a customer's endpoint is: its
// work must not run on the service's event loop. Answers 204 to every POST; tells its parent
// its port, and on request how many it has received.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

let received = 0;
const server = http.createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    received++;
    response.writeHead(204).end();
  });
});
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
process.on('message', () => process.send!({ received }));
// The parent gone (it ended, or failed without stopping this): nothing left to receive for.
process.on('disconnect', () => process.exit(0));
