/**
 * A seccomp filter for the scripts bubblewrap runs, written as classic BPF here rather than built
 * with libseccomp: the program is a few dozen instructions, bwrap takes it as bytes on a file
 * descriptor (`--seccomp FD`), and generating it needs no compiler, package or network. It
 * returns EPERM for the calls a script has no use for and that widen the kernel's attack
 * surface — new namespaces (unshare, setns, clone with CLONE_NEWUSER), mounts, kernel keyrings,
 * ptrace, bpf, perf events, userfaultfd, modules, kexec, reboot, swap, chroot — and ENOSYS for
 * clone3 (its flags sit in memory a filter cannot read; the C library falls back to clone).
 * Syscalls of another ABI (x32, or 32-bit) are refused. Only x86-64 has a table; elsewhere no
 * filter is installed and the sandbox relies on its namespaces and dropped privileges.
 */

const AUDIT_ARCH_X86_64 = 0xc000003e;
const X32_SYSCALL_BIT = 0x40000000;
const CLONE_NEWUSER = 0x10000000;
const EPERM = 1;
const ENOSYS = 38;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const RET_KILL_PROCESS = 0x80000000;

/** Offsets in struct seccomp_data. */
const NR = 0;
const ARCH = 4;
const ARG0_LOW = 16;

/** x86-64 numbers of the refused calls. */
const DENIED_X86_64: Record<string, number> = {
  ptrace: 101,
  syslog: 103,
  vhangup: 153,
  pivot_root: 155,
  chroot: 161,
  acct: 163,
  mount: 165,
  umount2: 166,
  swapon: 167,
  swapoff: 168,
  reboot: 169,
  iopl: 172,
  ioperm: 173,
  init_module: 175,
  delete_module: 176,
  quotactl: 179,
  kexec_load: 246,
  add_key: 248,
  request_key: 249,
  keyctl: 250,
  unshare: 272,
  perf_event_open: 298,
  name_to_handle_at: 303,
  open_by_handle_at: 304,
  setns: 308,
  finit_module: 313,
  kexec_file_load: 320,
  bpf: 321,
  userfaultfd: 323,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  mount_setattr: 442,
};
const CLONE_X86_64 = 56;
const CLONE3_X86_64 = 435;

type Instruction = [code: number, jt: number, jf: number, k: number];

/** The filter for this machine's architecture, as bwrap reads it (struct sock_filter[]), or undefined where there is no table. */
export function seccompProgram(arch: string = process.arch): Buffer | undefined {
  if (arch !== "x64") return undefined;
  const denied = Object.values(DENIED_X86_64);
  const program: Instruction[] = [];
  const errno = (code: number): number => RET_ERRNO | code;
  // Another architecture's calls (a 32-bit binary) could slip past the numbers below: kill.
  program.push([BPF_LD_W_ABS, 0, 0, ARCH]);
  program.push([BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64]);
  program.push([BPF_RET_K, 0, 0, RET_KILL_PROCESS]);
  program.push([BPF_LD_W_ABS, 0, 0, NR]);
  // x32 calls share the architecture, with a high bit set.
  program.push([BPF_JGE_K, 0, 1, X32_SYSCALL_BIT]);
  program.push([BPF_RET_K, 0, 0, errno(EPERM)]);
  for (const number of denied) {
    program.push([BPF_JEQ_K, 0, 1, number]);
    program.push([BPF_RET_K, 0, 0, errno(EPERM)]);
  }
  program.push([BPF_JEQ_K, 0, 1, CLONE3_X86_64]);
  program.push([BPF_RET_K, 0, 0, errno(ENOSYS)]);
  // clone: refused only when it asks for a new user namespace.
  program.push([BPF_JEQ_K, 0, 3, CLONE_X86_64]);
  program.push([BPF_LD_W_ABS, 0, 0, ARG0_LOW]);
  program.push([BPF_JSET_K, 0, 1, CLONE_NEWUSER]);
  program.push([BPF_RET_K, 0, 0, errno(EPERM)]);
  program.push([BPF_RET_K, 0, 0, RET_ALLOW]);
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], index) => {
    bytes.writeUInt16LE(code, index * 8);
    bytes.writeUInt8(jt, index * 8 + 2);
    bytes.writeUInt8(jf, index * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, index * 8 + 4);
  });
  return bytes;
}
