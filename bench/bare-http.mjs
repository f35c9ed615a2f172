// The baseline: a bare node:http server answering /health/live with the same body the service sends.
import { createServer } from 'node:http';

const body = JSON.stringify({ status: 'ok', info: {}, error: {}, details: {} });
createServer((req, res) => {
  if (req.url === '/health/live') {
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  } else {
    res.writeHead(404);
    res.end();
  }
}).listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
