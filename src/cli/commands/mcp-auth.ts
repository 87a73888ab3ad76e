import { spawn } from "node:child_process";
import type { Command } from "commander";
import { InputError } from "../../core/errors.js";
import { err, out, printJson } from "../io.js";

interface LoginFlags {
  dataDir?: string;
  databaseUrl?: string;
  open?: boolean;
  timeout?: string;
  json?: boolean;
}

/** Opens a URL in the person's browser with the platform's opener (no shell: the URL is one argument). */
function openInBrowser(url: URL): void {
  const [command, args] = process.platform === "darwin" ? ["open", [url.href]] : process.platform === "win32" ? ["rundll32", ["url.dll,FileProtocolHandler", url.href]] : ["xdg-open", [url.href]];
  const child = spawn(command as string, args as string[], { stdio: "ignore", detached: true });
  child.on("error", () => err(`(could not start ${command as string}: open the URL yourself)`));
  child.unref();
}

function storeFlags(command: Command): Command {
  return command
    .option("--data-dir <dir>", "where the sealed credentials are kept (default: TROUPE_DATA_DIR or ./.troupe)")
    .option("--database-url <url>", "postgres://…: keep them on Postgres (default: TROUPE_DATABASE_URL)");
}

/** `troupe mcp login | logout <server>`: authorizing troupe with an MCP server that uses OAuth, and forgetting it. */
export function registerMcpAuth(mcp: Command): void {
  const login = mcp
    .command("login <server>")
    .description("authorize troupe with an MCP server's authorization server (OAuth 2.1: PKCE, and troupe registers itself unless the config names a client); the tokens are kept sealed in the store for every later run")
    .option("--open", "open the authorization URL in the browser (default: print it)")
    .option("--timeout <seconds>", "how long to wait for the browser's redirect (default 300)")
    .option("--json", "print the outcome as JSON");
  storeFlags(login).action(async (server: string) => {
    // `troupe mcp` takes --data-dir too: whichever of the two parsed it.
    const flags = login.optsWithGlobals<LoginFlags>();
    const seconds = flags.timeout === undefined ? 300 : Number(flags.timeout);
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 3_600) throw new InputError("bad_request", `--timeout must be a whole number of seconds from 1 to 3600 (got "${flags.timeout}")`);
    const { mcpLogin } = await import("../../runtime/mcp-auth.js");
    const result = await mcpLogin(server, {
      ...(flags.dataDir !== undefined ? { dataDir: flags.dataDir } : {}),
      ...(flags.databaseUrl !== undefined ? { databaseUrl: flags.databaseUrl } : {}),
      timeoutMs: seconds * 1000,
      present: (url) => {
        err(`Open this URL to authorize troupe with the MCP server "${server}" (its authorization server decides what troupe may do there):`);
        err(url.href);
        err(`Waiting up to ${seconds} s for the browser to come back…`);
        if (flags.open) openInBrowser(url);
      },
    });
    if (flags.json) printJson({ server, authorized: result.authorized, tools: result.tools });
    else out(`${result.authorized ? `troupe is authorized with "${server}"` : `"${server}" did not ask for authorization`}: ${result.tools.length} tool${result.tools.length === 1 ? "" : "s"} (${result.tools.join(", ") || "none"})`);
  });

  const logout = mcp.command("logout <server>").description("forget what troupe keeps for an MCP server: its tokens, its client registration, the authorization server it found");
  storeFlags(logout).action(async (server: string) => {
    const flags = logout.optsWithGlobals<LoginFlags>();
    const { mcpLogout } = await import("../../runtime/mcp-auth.js");
    const dropped = await mcpLogout(server, { ...(flags.dataDir !== undefined ? { dataDir: flags.dataDir } : {}), ...(flags.databaseUrl !== undefined ? { databaseUrl: flags.databaseUrl } : {}) });
    out(dropped > 0 ? `forgot ${dropped} credential${dropped === 1 ? "" : "s"} of "${server}"` : `nothing was kept for "${server}"`);
  });
}
