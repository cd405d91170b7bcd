import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

// A real browser for the dashboard's tests: the machine's Chromium (Debian's `chromium`, which
// .ci/run installs), driven by playwright-core, which downloads no browser of its own.

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"];

export function chromiumPath(): string {
  const found = [process.env.CHROMIUM_PATH, ...CANDIDATES].find((p) => p && existsSync(p));
  if (!found) {
    throw new Error(
      "no Chromium found: install Debian's chromium (sudo apt-get install -y chromium) or set CHROMIUM_PATH",
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
 * set (`npm run screenshots`), so a normal test run leaves the committed images alone.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  const folder = process.env.SMS_DASHBOARD_SCREENSHOTS;
  if (!folder) return;
  mkdirSync(folder, { recursive: true });
  await page.screenshot({ path: path.join(folder, `${name}.png`), fullPage: true });
}
