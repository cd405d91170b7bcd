import Fastify, { type FastifyError } from "fastify";
import { describe, expect, it } from "vitest";
import { type PageErrors, registerErrorPages } from "../../src/pages/error-pages.ts";

// The error and not-found pages the dashboard and the console share, without a browser: a door's
// refusals are its own, the rest is answered alike.

class Refused extends Error {}

async function door() {
  const app = Fastify({ logger: false });
  registerErrorPages(app, {
    name: "console",
    render: (reply, title, errors) => reply.send({ title, errors }),
    refusal(error: unknown): { status: number; errors: PageErrors } {
      if (!(error instanceof Refused)) throw error;
      return { status: 409, errors: { name: [error.message] } };
    },
  });
  const thrown = (error: Error) => async () => {
    throw error;
  };
  app.get("/refused", thrown(new Refused("taken")));
  app.get("/stale", thrown(Object.assign(new Error("csrf"), { code: "FST_CSRF_INVALID_TOKEN" })));
  app.get("/bad", thrown(Object.assign(new Error("bad query"), { statusCode: 400 })));
  app.get("/crash", thrown(new Error("secret detail") as FastifyError));
  await app.ready();
  return app;
}

describe("the doors' error pages", () => {
  it("shows a refusal as the door maps it, a stale form as 403, a 4xx as itself, a crash as 500", async () => {
    const app = await door();
    const page = async (url: string) => {
      const answer = await app.inject({ url });
      return [answer.statusCode, answer.json()];
    };
    expect(await page("/refused")).toEqual([
      409,
      { title: "Error 409", errors: { name: ["taken"] } },
    ]);
    expect(await page("/stale")).toEqual([
      403,
      {
        title: "Error 403",
        errors: { request: ["the form was not sent from this console, or it is stale: reload it"] },
      },
    ]);
    expect(await page("/bad")).toEqual([
      400,
      { title: "Error 400", errors: { request: ["bad query"] } },
    ]);
    expect(await page("/crash")).toEqual([
      500,
      { title: "Error 500", errors: { request: ["internal error; please retry later"] } },
    ]);
    expect(await page("/nowhere?x=1")).toEqual([
      404,
      { title: "Not found", errors: { request: ["no such page: /nowhere"] } },
    ]);
    await app.close();
  });
});
