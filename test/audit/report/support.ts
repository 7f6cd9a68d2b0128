/**
 * A proxy that served real traffic from three bots to three origins, for the
 * report tests: GPTBot refused by a rule and paced by a crawl-delay, CCBot
 * refused on an origin whose robots.txt is unreachable, ExampleBot allowed,
 * one origin whose robots.txt changes between two fetches, and one upstream
 * 503 that pauses the blog.
 */
import { join } from 'node:path';
import { startOrigin, startTestProxy, type TestOrigin } from '../../helpers/harness.js';
import type { RunningProxy } from '../../../src/main.js';
import { sendMany, tempDir, UA } from '../ledger/support.js';

export const SHOP_ROBOTS_V1 = 'User-agent: GPTBot\nDisallow: /private/\nCrawl-delay: 0.3\n\nUser-agent: *\nAllow: /\n';
/** The shop's second version: a new rule (line 3), and a line the parser warns about (line 8, unknown-directive). */
export const SHOP_ROBOTS_V2 = 'User-agent: GPTBot\nDisallow: /private/\nDisallow: /cart/\nCrawl-delay: 0.3\n\nUser-agent: *\nAllow: /\nNoindex: /tmp/\n';

/** The proxy, its origins, and where its ledger is. */
export interface TrafficScenario {
  proxy: RunningProxy & { proxyUrl: string; adminUrl: string };
  shop: TestOrigin;
  blog: TestOrigin;
  down: TestOrigin;
  ledgerPath: string;
  close(): Promise<void>;
}

/** Starts the origins and the proxy and sends the traffic (about 20 requests). */
export async function startTrafficScenario(config: Record<string, unknown> = {}): Promise<TrafficScenario> {
  let shopFetches = 0;
  const shop = await startOrigin((req, res) => {
    if (req.url === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'max-age=1' });
      res.end(shopFetches++ === 0 ? SHOP_ROBOTS_V1 : SHOP_ROBOTS_V2);
      return;
    }
    res.end(`shop ${req.url}\n`);
  });
  const blog = await startOrigin((req, res) => {
    if (req.url === '/busy') {
      // An overloaded answer: the proxy pauses the blog (an upstream 429/503 pause in the report).
      res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '1' });
      res.end('busy\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(req.url === '/robots.txt' ? 'User-agent: *\nDisallow: /drafts/\n' : `blog ${req.url}\n`);
  });
  const down = await startOrigin((req, res) => {
    res.writeHead(req.url === '/robots.txt' ? 503 : 200, { 'content-type': 'text/plain' });
    res.end('down\n');
  });
  const stateDir = tempDir();
  // robots.txt lives 1 s (the shop's max-age), so the shop's second version is fetched.
  const proxy = await startTestProxy({ stateDir, robots: { minTtl: '1ms' }, ...config });
  const port = proxy.proxyAddress.port;
  await sendMany(port, `${shop.url}/products/1`, UA.gpt, 3);
  await sendMany(port, `${shop.url}/private/orders`, UA.gpt, 4);
  await sendMany(port, `${blog.url}/posts/1`, UA.example, 2);
  await sendMany(port, `${blog.url}/drafts/x`, UA.example, 1);
  await sendMany(port, `${down.url}/anything`, UA.ccbot, 3);
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await sendMany(port, `${shop.url}/cart/checkout`, UA.gpt, 2);
  await sendMany(port, `${shop.url}/products/2`, UA.ccbot, 1);
  await sendMany(port, `${blog.url}/busy`, UA.gpt, 1);
  return {
    proxy,
    shop,
    blog,
    down,
    ledgerPath: join(stateDir, 'ledger.sqlite'),
    async close() {
      await proxy.close();
      await Promise.all([shop.close(), blog.close(), down.close()]);
    },
  };
}
