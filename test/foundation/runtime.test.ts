/**
 * The runtime (docs/design.md, "Operations"; issue 16 item 1): Node 24 LTS. `npm test` runs on the
 * binary of the `node` package (npm scripts put node_modules/.bin first on the PATH), whatever
 * the machine's own Node is; this fails if the tests ever run on an older one.
 */
import { expect, it } from "vitest";

it("runs on Node 24 or newer", () => {
  const major = Number(process.versions.node.split(".")[0]);
  expect(major, `process.versions.node is ${process.versions.node}`).toBeGreaterThanOrEqual(24);
});
