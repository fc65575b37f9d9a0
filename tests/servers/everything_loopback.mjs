// Start @modelcontextprotocol/server-everything's Streamable HTTP transport bound to 127.0.0.1 only.
//
// Why: its HTTP entry calls `app.listen(PORT)` with no host, which binds every interface; our tests
// must stay on loopback. This launcher pins the host of that one listen call, then runs the
// package's own entry unchanged. Usage: PORT=3001 node everything_loopback.mjs   (endpoint /mcp)
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const originalListen = net.Server.prototype.listen;
net.Server.prototype.listen = function listenOnLoopback(...args) {
  // listen(port[, backlog][, callback]) without a host: insert 127.0.0.1 after the port.
  const portOnly = typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]));
  if (portOnly && typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  return originalListen.apply(this, args);
};

const entry = fileURLToPath(
  new URL('./node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);
process.argv = [process.argv[0], entry, 'streamableHttp'];
await import(entry);
