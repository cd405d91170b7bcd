import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

// The floors of .dependency-cruiser.cjs (which room may import which), checked as CI's
// `npm run lint:layers` checks them.

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DEPCRUISE = join(ROOT, "node_modules/.bin/depcruise");
const run = promisify(execFile);

async function cruise(cwd: string): Promise<{ ok: boolean; output: string }> {
  const args = ["--config", join(ROOT, ".dependency-cruiser.cjs"), "src"];
  try {
    const { stdout } = await run(DEPCRUISE, args, { cwd });
    return { ok: true, output: stdout };
  } catch (err) {
    return { ok: false, output: String((err as { stdout?: string }).stdout) };
  }
}

/** A tree of its own with the given files (path → source) and the project's tsconfig. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "layers-"));
  copyFileSync(join(ROOT, "tsconfig.json"), join(dir, "tsconfig.json"));
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), source);
  }
  return dir;
}

describe("the house's floors", () => {
  it("every import of src/ goes down or across to a room its floor may use", async () => {
    const result = await cruise(ROOT);
    expect(result.output).toContain("no dependency violations found");
    expect(result.ok).toBe(true);
  });

  it("refuse an arrow from the store up to the services, and a room without a floor", async () => {
    const result = await cruise(
      tree({
        "src/services/routes.ts": "export const routes = 1;\n",
        "src/store/numbers.ts":
          'import { routes } from "../services/routes.ts";\nexport const n = routes;\n',
        "src/anywhere/new-room.ts":
          'import { n } from "../store/numbers.ts";\nexport const m = n;\n',
      }),
    );
    expect(result.ok).toBe(false);
    expect(result.output).toContain(
      "floor-of-store: src/store/numbers.ts → src/services/routes.ts",
    );
    expect(result.output).toContain("room-has-a-floor: src/anywhere/new-room.ts");
  });
});
