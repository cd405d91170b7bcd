// A baseline commit checked out beside this one for a figure that compares with it (figures 6b,
// 10 and hostile): a temporary git worktree, built as production runs it, with this checkout's
// node_modules when its lockfile is the same, else with its own. An old commit may use a package
// this checkout no longer has (@connectrpc/connect-fastify went with cf1bfc0, and with it figure
// 10's and figure hostile's baselines), so its dependencies are installed from its own lockfile,
// once per lockfile, in the system's temporary directory.

import { execFile, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { existsSync, rmSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { buildService } from "./processes.ts";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const git = (...args: string[]) => promisify(execFile)("git", ["-C", root, ...args]);

/** Checks `ref` out in a temporary worktree with its dependencies; returns its path and how to remove it. */
export async function baselineCheckout(ref: string) {
  const parent = await mkdtemp(join(tmpdir(), "sms-bench-baseline-"));
  const dir = join(parent, "checkout");
  await git("worktree", "add", "--detach", dir, ref).catch(async (error: Error) => {
    await rm(parent, { recursive: true, force: true });
    throw error;
  });
  // Also when the run dies half-way (synchronously: nothing else runs on exit).
  const removeOnExit = () => {
    try {
      execFileSync("git", ["-C", root, "worktree", "remove", "--force", dir], { stdio: "ignore" });
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  };
  process.once("exit", removeOnExit);
  const remove = async () => {
    process.off("exit", removeOnExit);
    await git("worktree", "remove", "--force", dir).catch(() => undefined);
    await rm(parent, { recursive: true, force: true });
    await git("worktree", "prune").catch(() => undefined);
  };
  try {
    await symlink(await dependenciesOf(dir), join(dir, "node_modules"), "dir");
    // Measured as it would run in production, as the current code is (bench/processes.ts).
    await buildService(dir);
    const { stdout } = await git("-C", dir, "rev-parse", "--short", "HEAD");
    return { dir, commit: stdout.trim(), remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

/** The node_modules for the checkout in `dir`: this one's, or its own lockfile's (installed once). */
async function dependenciesOf(dir: string): Promise<string> {
  const read = (file: string) => readFile(file).catch(() => Buffer.alloc(0));
  const [manifest, lock, ourLock] = await Promise.all([
    read(join(dir, "package.json")),
    read(join(dir, "package-lock.json")),
    read(join(root, "package-lock.json")),
  ]);
  if (lock.length > 0 && lock.equals(ourLock)) return join(root, "node_modules");
  const key = createHash("sha256").update(manifest).update(lock).digest("hex").slice(0, 16);
  const cache = join(tmpdir(), `sms-bench-deps-${key}`);
  const installed = join(cache, ".installed");
  if (!existsSync(installed)) {
    await rm(cache, { recursive: true, force: true });
    await mkdir(cache, { recursive: true });
    await copyFile(join(dir, "package.json"), join(cache, "package.json"));
    if (lock.length > 0)
      await copyFile(join(dir, "package-lock.json"), join(cache, "package-lock.json"));
    // `npm install`, not `npm ci`: an old lockfile may lack newer platforms' optional packages.
    const child = spawn("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: cache,
      stdio: ["ignore", "ignore", "inherit"],
    });
    const [code] = await once(child, "exit");
    if (code !== 0)
      throw new Error(`npm install of the baseline's dependencies failed (exit ${code})`);
    await writeFile(installed, "");
  }
  return join(cache, "node_modules");
}
