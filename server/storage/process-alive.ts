// Whether a process id names a running process: what the owner of a file named after a pid
// (a data directory's lock, a spooled upload part) is checked with.
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
