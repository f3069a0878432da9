/**
 * HTTP for the benchmark: a `node:http` server on 127.0.0.1 that hands each
 * request to a fetch handler (the REST surface), and a keep-alive client.
 * Both are as thin as they can be, so what they add is the cost of HTTP
 * itself (parsing, sockets, the fetch Request/Response objects the REST
 * handler works with), paid alike by every scenario.
 */
import { Agent, createServer, request, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

export type FetchHandler = (req: Request) => Promise<Response>;

function headersOf(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  return headers;
}

async function readAll(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

export type Listening = { origin: string; close: () => Promise<void> };

/** Serves `handler` on a free port of 127.0.0.1. */
export async function serve(handler: FetchHandler): Promise<Listening> {
  const server = createServer((req, res) => {
    void (async () => {
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : (await readAll(req)).toString("utf8");
      const response = await handler(
        new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers: headersOf(req), body }),
      );
      const text = Buffer.from(await response.arrayBuffer());
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(text);
    })().catch((error: unknown) => res.destroy(error instanceof Error ? error : new Error(String(error))));
  });
  // The client keeps sockets for the whole run; the server must not drop them first.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export type Reply = { status: number; headers: IncomingMessage["headers"]; body: string };

export type Client = {
  origin: string;
  send: (method: "GET" | "POST", path: string, headers: Record<string, string>, body?: string) => Promise<Reply>;
  close: () => void;
};

/** One socket per worker at most: `maxSockets` is the benchmark's concurrency. */
export function client(origin: string, maxSockets: number): Client {
  const agent = new Agent({ keepAlive: true, maxSockets });
  const send: Client["send"] = (method, path, headers, body) =>
    new Promise((resolve, reject) => {
      const req = request(`${origin}${path}`, { method, headers, agent }, (res) => {
        readAll(res).then(
          (buffer) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: buffer.toString("utf8") }),
          reject,
        );
      });
      req.on("error", reject);
      req.end(body);
    });
  return { origin, send, close: () => agent.destroy() };
}
