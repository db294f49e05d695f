// CPU time and memory of a process from /proc (Linux). Throughput on a shared machine drifts with
// whatever else runs; the CPU a server spends per request drifts much less, so both are reported.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const clockTicks = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU a process has used so far, in ms (all its threads); null where /proc is not there. */
export function cpuMs(pid: number): number | null {
  try {
    // The command name may hold spaces: fields are counted after its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
  } catch {
    return null;
  }
}

/** Resident memory of a process and its peak so far, MiB. */
export const rssOf = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
};
