import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

// A real browser for the dashboard's tests: the machine's Chromium (Debian's `chromium`, which
// `npm test` installs where it may: scripts/system-tools.sh), driven by playwright-core, which
// downloads no browser of its own.

/** SMS_TEST_SKIP_BROWSER=1 skips the browser tests; a missing Chromium never does (CI sets none). */
export const browserTestsSkipped = process.env.SMS_TEST_SKIP_BROWSER === "1";

// The same search as scripts/system-tools.sh: CHROMIUM_PATH, else these names on the PATH.
const NAMES = ["chromium", "chromium-browser", "google-chrome"];

export function chromiumPath(): string {
  const onPath = (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter(Boolean)
    .flatMap((dir) => NAMES.map((name) => path.join(dir, name)));
  const found = [process.env.CHROMIUM_PATH, ...onPath].find((p) => p && existsSync(p));
  if (!found) {
    throw new Error(
      "no Chromium found: install Debian's chromium (sudo apt-get install -y chromium), set CHROMIUM_PATH, or skip the browser tests with SMS_TEST_SKIP_BROWSER=1",
    );
  }
  return found;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    // Root (as in CI containers) cannot use Chromium's sandbox.
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}

/**
 * Saves a screenshot of `page` as docs/dashboard/<name>.png when SMS_DASHBOARD_SCREENSHOTS is
 * set (`npm run screenshots`), so a normal test run leaves the committed images alone. The
 * console's go to docs/console/ (SMS_CONSOLE_SCREENSHOTS).
 */
export async function screenshot(
  page: Page,
  name: string,
  folderVariable = "SMS_DASHBOARD_SCREENSHOTS",
): Promise<void> {
  const folder = process.env[folderVariable];
  if (!folder) return;
  mkdirSync(folder, { recursive: true });
  await page.screenshot({ path: path.join(folder, `${name}.png`), fullPage: true });
}

/** The text of each cell of the body rows of the table named `name` (its caption), row by row. */
export function tableCells(page: Page, name: string): Promise<(string | null)[][]> {
  return page
    .getByRole("table", { name })
    .locator("tbody tr")
    .evaluateAll((trs) =>
      trs.map((tr) => Array.from(tr.querySelectorAll("td"), (td) => td.textContent)),
    );
}
