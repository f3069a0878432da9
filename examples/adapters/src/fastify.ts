/** Fastify 5: tRPC's Fastify plugin registered at /trpc. */
import { fastifyTRPCPlugin, type FastifyTRPCPluginOptions } from "@trpc/server/adapters/fastify";
import fastify from "fastify";
import { answerHeaders, contextOf, headersOf, type AppRouter } from "./app.js";

export async function fastifyApp(router: AppRouter) {
  const app = fastify();
  const trpcOptions: FastifyTRPCPluginOptions<AppRouter>["trpcOptions"] = {
    router,
    createContext: ({ req }) => contextOf(headersOf(req.headers)),
    responseMeta: answerHeaders,
  };
  await app.register(fastifyTRPCPlugin, { prefix: "/trpc", trpcOptions });
  return app;
}
