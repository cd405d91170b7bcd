/** Writes a carriers file (SMS_CARRIERS_FILE) of these YAML lines to a fresh temporary folder; returns its path. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function carriersFile(lines: readonly string[]): string {
  const file = join(mkdtempSync(join(tmpdir(), "carriers-")), "carriers.yaml");
  writeFileSync(file, lines.join("\n"));
  return file;
}
