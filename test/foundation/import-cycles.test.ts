import { fileURLToPath } from "node:url";
import { parseCircular, parseDependencyTree } from "dpdm";
import { describe, expect, it } from "vitest";

// The house has no import circles (issue 25, "The house"): a circle, type imports included, means
// a type or value lives in a room that is not its own. `npm run lint:cycles` prints the same graph.

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

describe("imports", () => {
  it("form no circle in src, bench or test", async () => {
    const tree = await parseDependencyTree(["src/**/*.ts", "bench/**/*.ts", "test/**/*.ts"], {
      cwd: ROOT,
      context: ROOT,
      extensions: [".ts"],
      // Type-only imports count: they tie the modules together as much as values do.
      transform: false,
      skipDynamicImports: false,
    });
    expect(Object.keys(tree).length).toBeGreaterThan(100);
    expect(parseCircular(tree)).toEqual([]);
  });
});
