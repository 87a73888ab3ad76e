import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CLI, cleanEnv, tempDir } from "./helpers.js";
import { waitFor } from "./wait.js";

/**
 * `troupe chat` driven through a real pseudo-terminal: tmux runs it in a detached session (its
 * own server socket), keys are sent as a person types them, and the screen is read back as a
 * person sees it. tmux comes from the Debian package (.ci/system-packages.sh installs it).
 */
class Terminal {
  readonly #socket: string;
  readonly #session = "chat";

  constructor(directory: string) {
    this.#socket = path.join(directory, "tmux.sock");
  }

  #tmux(...args: string[]): string {
    return execFileSync("tmux", ["-S", this.#socket, ...args], { encoding: "utf8", env: { ...cleanEnv(), TERM: "xterm-256color" } });
  }

  start(cwd: string, args: string[]): void {
    if (!existsSync("/usr/bin/tmux") && !execFileSync("sh", ["-c", "command -v tmux || true"], { encoding: "utf8" }).trim()) {
      throw new Error("this test drives troupe chat through tmux, which is missing: install it with sudo apt-get install tmux (npm test runs .ci/system-packages.sh, which does)");
    }
    const command = [process.execPath, CLI, ...args].map((part) => `'${part.replace(/'/g, "'\\''")}'`).join(" ");
    // The pane outlives the process, so its last words and exit code can be read.
    this.#tmux("new-session", "-d", "-s", this.#session, "-x", "160", "-y", "60", "-c", cwd, `${command}; echo "[exit $?]"; sleep 600`);
  }

  /** The screen and its scrollback, as text. */
  screen(): string {
    return this.#tmux("capture-pane", "-p", "-J", "-t", this.#session, "-S", "-2000");
  }

  type(text: string): void {
    this.#tmux("send-keys", "-t", this.#session, "-l", text);
  }

  press(...keys: string[]): void {
    this.#tmux("send-keys", "-t", this.#session, ...keys);
  }

  line(text: string): void {
    this.type(text);
    this.press("Enter");
  }

  /** Waits until the screen matches (`count` times), and returns it. */
  async waitFor(pattern: RegExp, count = 1): Promise<string> {
    return waitFor(() => {
      const screen = this.screen();
      return [...screen.matchAll(new RegExp(pattern.source, `${pattern.flags.replace("g", "")}g`))].length >= count ? screen : undefined;
    }, () => `${pattern} ×${count}; the screen:\n${this.screen()}`, 100);
  }

  kill(): void {
    try {
      this.#tmux("kill-server");
    } catch {
      // Already gone.
    }
  }
}

const terminals: Terminal[] = [];
afterEach(() => {
  for (const terminal of terminals.splice(0)) terminal.kill();
});

describe("troupe chat in a terminal", () => {
  it("answers each line on one thread, asks for approval, takes /approve and /reject, lists /runs, keeps history, and quits", async () => {
    const directory = tempDir("troupe-chat-");
    const terminal = new Terminal(directory);
    terminals.push(terminal);
    terminal.start(directory, ["chat", "--thread", "talk"]);
    await terminal.waitFor(/troupe chat · thread talk/);
    await terminal.waitFor(/you> $/m);

    terminal.line("compute 2+3");
    let screen = await terminal.waitFor(/✓ completed/);
    // Live progress (stderr) and the answer (stdout) on the same screen.
    expect(screen).toMatch(/▸ plan ready: 1 subtask/);
    expect(screen).toMatch(/- Compute 2\+3: 2\+3 = 5/);

    terminal.line("save it to mem.txt");
    await terminal.waitFor(/✓ completed/, 2);
    expect(readFileSync(path.join(directory, "workspace", "mem.txt"), "utf8")).toBe("5");

    terminal.line("remember that the launch code is 0451");
    await terminal.waitFor(/✓ completed/, 3);
    terminal.line("forget what you know about the launch code");
    await terminal.waitFor(/⏸ the memory agent wants to run the high-risk tool memory_forget/);
    // While it waits, a task is not started behind its back.
    terminal.line("compute 9*9");
    await terminal.waitFor(/the run waits for you first/);
    terminal.line("/approve");
    screen = await terminal.waitFor(/✓ completed/, 4);
    expect(screen).toMatch(/forgot m-[0-9a-f]{12}: the launch code is 0451/);

    terminal.line("remember that the door code is 1234");
    await terminal.waitFor(/✓ completed/, 5);
    terminal.line("forget what you know about the door code");
    await terminal.waitFor(/⏸ the memory agent wants to run the high-risk tool memory_forget/, 2);
    terminal.line("/reject keep it");
    screen = await terminal.waitFor(/✗ (failed|rejected)/);
    expect(screen).toMatch(/rejected/);

    terminal.line("/runs");
    // Six runs: the line typed while a run waited was not run.
    screen = await terminal.waitFor(/^\s+6\. failed\s+forget what you know about the door code/m);
    expect(screen).not.toMatch(/^\s+7\./m);
    expect(screen).toMatch(/^\s+1\. completed\s+compute 2\+3/m);
    expect(screen).toMatch(/^\s+2\. completed\s+save it to mem\.txt/m);
    // The line history: the up arrow brings back /runs.
    terminal.press("Up");
    terminal.press("Enter");
    await terminal.waitFor(/^\s+1\. completed\s+compute 2\+3/m, 2);

    terminal.line("/nonsense");
    await terminal.waitFor(/unknown command \/nonsense/);
    // Bad lines are answered and the session goes on: too long, blank, control characters, a command without its text.
    terminal.line("x".repeat(5_100));
    await terminal.waitFor(/error: the task is longer than 5000 characters/);
    terminal.line("   ");
    terminal.line("/answer");
    await terminal.waitFor(/\/answer needs some text/);
    terminal.type("\u0001\u0007 compute 1+1");
    terminal.press("Enter");
    await terminal.waitFor(/✓ completed/, 5 + 1);
    terminal.line("/quit");
    screen = await terminal.waitFor(/\[exit \d+\]/);
    expect(screen).toMatch(/bye · thread talk/);
    expect(screen).toMatch(/\[exit 0\]/);
    const history = readFileSync(path.join(directory, ".troupe", "chat-history"), "utf8").split("\n");
    expect(history).toContain("save it to mem.txt");
    expect(history).toContain("/approve");
  });

  it("continues an earlier conversation, and Ctrl-C at the prompt leaves", async () => {
    const directory = tempDir("troupe-chat-");
    const first = new Terminal(directory);
    terminals.push(first);
    first.start(directory, ["chat", "--thread", "again"]);
    await first.waitFor(/you> $/m);
    first.line("compute 6*7");
    await first.waitFor(/✓ completed/);
    first.line("/quit");
    await first.waitFor(/\[exit 0\]/);
    first.kill();

    const second = new Terminal(directory);
    terminals.push(second);
    second.start(directory, ["chat", "--thread", "again"]);
    await second.waitFor(/1 earlier run on this thread; the latest: "compute 6\*7" \(completed\)/);
    await second.waitFor(/you> $/m);
    second.line("double it");
    const screen = await second.waitFor(/✓ completed/);
    // A direct calculator step over the earlier result, bound as its variable.
    // In the task's words: the value doubled, not the name the plan bound it to.
    expect(screen).toMatch(/Double it: 42 \* 2 = 84/);
    second.press("C-c");
    await second.waitFor(/\[exit 0\]/);
  });
});
