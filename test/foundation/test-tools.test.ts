/**
 * `npm test` on a machine without Debian's chromium and prometheus (issue 25 item 1): where this
 * user may not install them, it stops before any test with the one command that installs them,
 * and only SMS_TEST_SKIP_BROWSER=1 / SMS_TEST_SKIP_PROMETHEUS=1 let it go on without them.
 *
 * The machine without them is this one seen through a PATH of links to every program on it but
 * the tools (and sudo, so nothing can be installed); as root, the script runs as `nobody`
 * (setpriv), who may not install either. The installing path itself (root or sudo: apt-get) is
 * what .ci/run runs on every fresh machine.
 */
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const LEFT_OUT = new Set([
  "chromium",
  "chromium-browser",
  "google-chrome",
  "prometheus",
  "promtool",
  "sudo",
]);
const NOBODY = 65534;

let bin: string;
let home: string;

beforeAll(() => {
  bin = mkdtempSync(join(tmpdir(), "sms-no-tools-"));
  home = mkdtempSync(join(tmpdir(), "sms-no-tools-home-"));
  chmodSync(bin, 0o755);
  // The first of each name on the PATH, as a shell would find it.
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir || !existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      const link = join(bin, name);
      if (LEFT_OUT.has(name) || existsSync(link)) continue;
      try {
        symlinkSync(join(dir, name), link);
      } catch {
        // a name seen twice in one listing (a dangling link first)
      }
    }
  }
  if (process.getuid?.() === 0) chownSync(home, NOBODY, NOBODY);
});

afterAll(() => {
  rmSync(bin, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
});

/** Runs `command` in the project without the tools, as a user who may not install them. */
function withoutTools(command: string[], env: Record<string, string> = {}) {
  // Root could install them: drop to nobody, who cannot.
  const asUser =
    process.getuid?.() === 0
      ? ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"]
      : [];
  const [file, ...args] = [...asUser, ...command];
  const run = spawnSync(file ?? "", args, {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 60_000,
    env: { PATH: bin, HOME: home, npm_config_update_notifier: "false", ...env },
  });
  if (run.error) throw run.error;
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe("npm test without Debian's chromium and prometheus, and no right to install them", () => {
  it("stops before any test, with the one command that installs both", () => {
    const run = withoutTools(["npm", "test"]);
    expect(run.status, run.output).not.toBe(0);
    expect(run.output).toContain(
      "sudo apt-get update && sudo apt-get install -y chromium prometheus",
    );
    expect(run.output).toContain("SMS_TEST_SKIP_BROWSER=1 SMS_TEST_SKIP_PROMETHEUS=1 npm test");
    // Neither the PyPI tools' installation nor vitest started.
    expect(run.output).not.toMatch(/installing .* from PyPI|RUN\s+v\d/);
  });

  it("names only what is still wanted when one tool's tests are skipped", () => {
    const run = withoutTools(["npm", "test"], { SMS_TEST_SKIP_BROWSER: "1" });
    expect(run.status, run.output).not.toBe(0);
    expect(run.output).toContain("sudo apt-get install -y prometheus\n");
    expect(run.output).not.toContain("chromium");
  });

  it("goes on when both tools' tests are skipped by their variables", () => {
    const run = withoutTools(["bash", "scripts/system-tools.sh"], {
      SMS_TEST_SKIP_BROWSER: "1",
      SMS_TEST_SKIP_PROMETHEUS: "1",
    });
    expect(run.status, run.output).toBe(0);
    expect(run.output).toBe("");
  });
});
