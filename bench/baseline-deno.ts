// The same baseline on Deno.serve.
declare const Deno: {
  env: { get(name: string): string | undefined };
  serve(o: { port: number; hostname: string; onListen(a: { port: number }): void }, h: (r: Request) => Promise<Response>): unknown;
  addSignalListener(s: string, f: () => void): void;
  exit(code: number): never;
};
Deno.serve({ port: Number(Deno.env.get('PORT') ?? 0), hostname: '127.0.0.1', onListen: ({ port }) => console.log(`listening on http://127.0.0.1:${port}`) }, async (req) => {
  const body = JSON.parse(await req.text());
  const n = Array.isArray(body.events) ? body.events.length : 1;
  return new Response(JSON.stringify({ accepted: n, rejected: 0 }), { headers: { 'content-type': 'application/json' } });
});
Deno.addSignalListener('SIGTERM', () => Deno.exit(0));
