/** The fleet server's entry (docs/cloud.md); the fleet core replaces this placeholder. */
console.error('fleet: not built yet');
process.exit(1);
