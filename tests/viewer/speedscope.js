// Opens a Chrome trace-event JSON file in speedscope (the npm package,
// beside this file) under headless Chromium and prints what speedscope
// made of it: the profile's name and how many profiles (one per thread
// or stream that has events) it parsed, as "PROFILES NAME"; with a
// second argument (not -), a PNG screenshot of the flame chart there;
// with a third, what speedscope made of the file, through its Export
// button: its own JSON format, every profile's frames opened and closed
// at the times it computed (the durations it draws).
// Usage: node speedscope.js FILE.json [SHOT.png | -] [EXPORT.json]
'use strict';
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
	const file = path.resolve(process.argv[2]);
	const shot = process.argv[3] === '-' ? undefined : process.argv[3];
	const exported = process.argv[4];
	const exe = process.env.CHROMIUM || '/usr/bin/chromium';
	const browser = await chromium.launch({
		executablePath: exe,
		args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
			'--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	try {
		const page = await browser.newPage({ viewport: { width: 1200, height: 700 },
			acceptDownloads: true });
		const errors = [];
		page.on('pageerror', (e) => errors.push(String(e)));
		const index = path.join(__dirname, 'node_modules/speedscope/dist/release/index.html');
		await page.goto('file://' + index);
		await page.setInputFiles('input[type=file]', file);
		// The toolbar names the profile once imported: "NAME (I/N)" with
		// N profiles, or "NAME" alone with one.
		await page.waitForFunction(() => document.title !== 'speedscope', null, { timeout: 30000 });
		const text = await page.evaluate(() => document.body.innerText);
		const m = text.match(/\((\d+)\/(\d+)\)/);
		const n = m ? Number(m[2]) : 1;
		if (shot)
			await page.screenshot({ path: shot });
		if (exported) {
			const [download] = await Promise.all([
				page.waitForEvent('download', { timeout: 60000 }),
				page.getByText(/^\W*Export$/).first().click(),
			]);
			await download.saveAs(exported);
		}
		console.log(`${n} ${await page.title()}`);
		if (errors.length)
			console.error(errors.join('\n'));
	} finally {
		await browser.close();
	}
}

main().catch((e) => {
	console.error(`speedscope.js: ${e.message.split('\n')[0]}`);
	process.exit(1);
});
