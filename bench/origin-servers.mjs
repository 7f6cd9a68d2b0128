// The bench's origins in plain JavaScript (for the .mjs tools that run without tsx): `count` HTTP listeners
// on 127.0.0.1, each answering /robots.txt with `robotsTxt` and anything else with `page`.
import http from 'node:http';

/**
 * Starts `count` origins (one port each) in this process.
 * @param {number} count
 * @param {{ robotsTxt: string, page: Buffer | string, keepAliveMs: number }} options keepAliveMs: the servers' keepAliveTimeout, ms
 * @returns {Promise<number[]>} the ports
 */
export async function startOriginServers(count, { robotsTxt, page, keepAliveMs }) {
  const ports = [];
  for (let i = 0; i < count; i++) {
    const server = http.createServer((req, res) => {
      const body = req.url === '/robots.txt' ? robotsTxt : page;
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(body.length) });
      res.end(body);
    });
    server.keepAliveTimeout = keepAliveMs;
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    ports.push(server.address().port);
  }
  return ports;
}
