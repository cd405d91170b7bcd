/**
 * Builds a small Java tool of the project (the test database emulator, the test SMSC) with Maven
 * when its jar is missing or older than its sources. Several processes (test workers, `npm start`)
 * may ask at once: one builds under a lock file, the others wait for it.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, open, readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";

export const MAVEN_TIMEOUT_MS = 570_000;

export interface MavenProject {
  /** The folder holding pom.xml and src/. */
  dir: string;
  /** The jar the build makes (with its dependencies in target/lib). */
  jar: string;
  /** Extra Maven arguments after `-q -B`, before `package`. */
  args?: string[];
  /** Name in log lines, e.g. "database: building the MongoDB emulator". */
  describe: string;
}

export async function ensureMavenBuilt(
  project: MavenProject,
  log: (msg: string) => void = () => {},
): Promise<void> {
  if (await buildIsFresh(project)) return;
  await mkdir(join(project.dir, "target"), { recursive: true });
  const lockPath = join(project.dir, "target", ".build.lock");
  const deadline = Date.now() + MAVEN_TIMEOUT_MS + 30_000;
  for (;;) {
    try {
      const handle = await open(lockPath, "wx");
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const age = await stat(lockPath).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age > MAVEN_TIMEOUT_MS + 30_000) {
        await rm(lockPath, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lockPath}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    if (await buildIsFresh(project)) return;
    log(
      `${project.describe} with Maven (first run only; fetches its libraries from Maven Central)`,
    );
    const started = Date.now();
    await runMaven(project.dir, ["-q", "-B", ...(project.args ?? []), "package"]);
    if (!(await buildIsFresh(project)))
      throw new Error(`Maven finished but ${project.jar} is missing`);
    log(`${project.describe}: built in ${Date.now() - started} ms`);
  } finally {
    await rm(lockPath, { force: true });
  }
}

async function buildIsFresh({ dir, jar }: MavenProject): Promise<boolean> {
  if (!existsSync(jar) || !existsSync(join(dir, "target", "lib"))) return false;
  const jarTime = (await stat(jar)).mtimeMs;
  for (const source of await listFiles([join(dir, "pom.xml"), join(dir, "src")])) {
    if ((await stat(source)).mtimeMs > jarTime) return false;
  }
  return true;
}

async function listFiles(paths: string[]): Promise<string[]> {
  const files: string[] = [];
  for (const path of paths) {
    const info = await stat(path).catch(() => undefined);
    if (!info) continue;
    if (info.isDirectory()) {
      files.push(...(await listFiles((await readdir(path)).map((e) => join(path, e)))));
    } else {
      files.push(path);
    }
  }
  return files;
}

async function runMaven(cwd: string, args: string[]): Promise<void> {
  const child = spawn("mvn", args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const timer = setTimeout(() => child.kill("SIGKILL"), MAVEN_TIMEOUT_MS);
  try {
    const code = await new Promise<number | null>((resolveCode, reject) => {
      child.once("error", (err) =>
        reject(new Error(`cannot run mvn (is Maven on PATH?): ${err.message}`)),
      );
      child.once("exit", (exitCode) => resolveCode(exitCode));
    });
    if (code !== 0) throw new Error(`mvn ${args.join(" ")} failed (exit ${code}):\n${output}`);
  } finally {
    clearTimeout(timer);
  }
}
