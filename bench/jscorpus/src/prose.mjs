// Deterministic prose for the corpus: articles, docs pages, product pages and
// dashboards, each from its own topic and a seeded choice of sentence
// templates, so every page reads differently and no network is needed.

/** FNV-1a of a string, as a 32-bit seed. */
function hash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A small seeded generator (mulberry32) with the helpers the templates use. */
export function rng(seedText) {
  let a = hash(seedText);
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = (list) => list[Math.floor(next() * list.length)];
  const sample = (list, n) => {
    const copy = list.slice();
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [copy[i], copy[j]] = [copy[j], copy[i]];
    }
    return copy.slice(0, n);
  };
  // n of the list, kept in the list's order (sentences that build on each other).
  const ordered = (list, n) => {
    const keep = new Set(sample(list.map((_, i) => i), n));
    return list.filter((_, i) => keep.has(i));
  };
  return { next, int, pick, sample, ordered };
}

const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);
// Everything after the given name: "Ó Briain", "Oliveira".
const surname = (name) => name.split(' ').slice(1).join(' ');
const fmt = (n) => n.toLocaleString('en-GB');

/** Fills `{slot}` names of a template from `vars` (an unknown slot is an error). */
function fill(template, vars) {
  return template.replace(/\{(\w+)\}/g, (_, key) => {
    if (!(key in vars)) throw new Error(`template slot {${key}} has no value: ${template}`);
    return String(vars[key]);
  });
}

const NAMES = [
  'Amara Okafor', 'Bastien Leroy', 'Chiara Bellini', 'Dmitri Volkov', 'Esther Nakamura',
  'Farid Haddad', 'Greta Lindqvist', 'Hamish Doyle', 'Ines Carvalho', 'Jonas Weber',
  'Keiko Tanabe', 'Leila Farouk', 'Mateo Ruiz', 'Nadia Petrova', 'Olumide Adeyemi',
  'Paulina Nowak', 'Quentin Marchand', 'Rosa Jiménez', 'Sefa Mensah', 'Tilda Bergström',
  'Umar Siddiqui', 'Vera Horvat', 'Wen Li', 'Ximena Castro', 'Yusuf Demir',
  'Zofia Kowalczyk', 'Anders Holm', 'Beatriz Souza', 'Cormac Walsh', 'Daria Ionescu',
  'Elif Aydın', 'Felix Brandt', 'Gaia Romano', 'Hugo Lambert', 'Isla McKenzie',
  'Jakub Dvořák', 'Kamala Iyer', 'Lorenzo Greco', 'Mirela Popescu', 'Niamh Gallagher',
];

// ---------------------------------------------------------------- articles

// subject | place | person | role | org | things | measure | problem | tool | season | field | venue
const ARTICLE_TOPICS = `
urban beekeeping|Lisbon|Marta Oliveira|a former civil engineer|the Alfama Rooftop Apiary|rooftop hives|kilograms of honey|varroa mites|a scale that weighs each hive every hour|late spring|urban ecology|the roof of a disused printing works
community seed libraries|Asheville|Dolores Whitfield|a retired schoolteacher|the Blue Ridge Seed Exchange|heirloom seed packets|varieties saved|cross-pollination between neighbouring plots|a card catalogue rescued from the county library|early autumn|horticulture|a converted grain store
tidal marsh restoration|the Severn estuary|Owen Pritchard|a hydrologist|the Severn Marsh Trust|restored mudflats|hectares of saltmarsh|winter storm surges|drones that map the channels after every spring tide|the stormy months|coastal engineering|an abandoned stretch of sea wall
mechanical clock repair|Kraków|Tomasz Zieliński|a third-generation watchmaker|the Kazimierz Horology Workshop|tower clocks|hours of restoration work|worn escapements|a lathe built in the 1920s|the weeks before Easter|conservation|a cellar workshop beneath a bakery
dark-sky protection|Flagstaff|Renata Alvarez|an astronomer turned campaigner|the Coconino Dark Sky Coalition|shielded street lamps|readings of sky brightness|glare from new housing estates|a handheld meter that measures sky quality|the new moon of each month|astronomy|the old observatory road
street tree mapping|Melbourne|Priya Raman|a mapping analyst|the Yarra Canopy Project|street trees|square metres of shade|summer heat stress|an open map on which residents tag every tree|the hottest weeks of summer|urban forestry|a laneway behind the Queen Victoria Market
traditional soy sauce brewing|Shodoshima|Kenji Hamada|a fourth-generation brewer|the Hamada Cedar Barrel Works|cedar fermentation barrels|litres of soy sauce|uneven cellar temperatures|a notebook of daily readings kept since 1962|the cold months|food science|a timber brewhouse near the harbour
dry stone walling|the Yorkshire Dales|Alice Thwaite|a hill farmer and waller|the Wharfedale Walling Guild|field walls|metres of rebuilt wall|frost heave|a wooden batter frame and a string line|the dry weeks of March|rural heritage|a hillside above the River Wharfe
winter cycling|Oulu|Sanna Virtanen|a transport planner|the Oulu Winter Cycling Office|cleared cycle routes|kilometres of ploughed path|packed ice|a sensor network that flags icy stretches before dawn|January|urban mobility|the bridge over the Oulujoki
coral nurseries|the Florida Keys|Marcus Delgado|a marine biologist|the Keys Reef Renewal Lab|staghorn coral fragments|coral colonies planted out|marine heatwaves|underwater frames built from plastic pipe|the late summer heat|marine conservation|a dive shop on Tavernier Creek
player piano restoration|Leipzig|Johanna Krüger|a piano technician|the Leipzig Roll Archive|perforated music rolls|restored instruments|brittle rubber tubing|a scanner that reads the holes in each roll|the autumn term|music history|a former fur warehouse
minority-language radio|Galway|Ciarán Ó Briain|a radio producer|Raidió na Cathrach|weekly programmes|hours of broadcasting|a shrinking audience of native speakers|an archive of recordings made in the 1950s|the winter schedule|linguistics|a studio above a pharmacy on Shop Street
market food-waste composting|Nairobi|Wanjiru Kamau|a soil scientist|the Wakulima Compost Cooperative|compost windrows|tonnes of finished compost|the long rains|thermometers pushed deep into every pile|the rainy season|agriculture|the edge of the wholesale market
rural railway revival|the Scottish Borders|Callum Reid|a former signalman|the Tweed Valley Line Volunteers|restored station buildings|kilometres of relaid track|landslips along the cuttings|a survey trolley pushed along the line by hand|the closed season|transport heritage|a goods shed at Stow
little free libraries|Montevideo|Lucía Fernández|a school librarian|the Barrio Sur Book Network|street book boxes|books exchanged|damp and vandalism|a shared spreadsheet of every box and its keeper|the school holidays|literacy|a corner of the Plaza Zabala
public fountain repair|Rome|Giacomo Ferretti|a hydraulic engineer|the Acqua Viva Fountain Society|neighbourhood drinking fountains|litres of water saved|limescale in the old pipes|a pressure gauge that fits every spout|the summer heat|urban infrastructure|a courtyard in Trastevere
dawn chorus recording|the Białowieża Forest|Agnieszka Wróbel|an ornithologist|the Białowieża Sound Archive|recording stations|hours of birdsong|logging noise from the forest edge|solar-powered recorders strapped to oak trunks|May|bioacoustics|a ranger's hut at the forest edge
oyster reef restoration|Chesapeake Bay|Darnell Whitaker|a waterman turned ecologist|the Tangier Sound Oyster Partnership|reef beds|bushels of oysters|low oxygen in deep water|recycled shell cages lowered from a workboat|the spawning season|fisheries science|a crab-packing plant on Smith Island
wooden boat building|Hardanger|Ingrid Solheim|a boatbuilder|the Hardanger Boatyard School|clinker-built rowing boats|boats launched|a shortage of good pine|hand tools copied from museum pieces|the long spring evenings|maritime craft|a boathouse on the Hardangerfjord
community fridges|Glasgow|Siobhan Mullan|a youth worker|the Govanhill Community Fridge|shared fridges|meals shared|food-safety rules written for shops|a rota kept on a whiteboard by the door|the weeks before Christmas|food justice|a former post office on Allison Street
sea salt harvesting|Guérande|Yann Le Gall|a paludier|the Guérande Salt Workers' Cooperative|salt pans|tonnes of grey salt|summer storms|a wooden rake called a las|the dry weeks of August|coastal farming|the salt marshes west of the old town
hedgerow planting|Devon|Martha Quick|a farm conservation adviser|the Tamar Hedgerow Alliance|new hedgerows|kilometres of hedge|browsing deer|tree guards made from recycled cardboard|the planting season from November to March|farmland ecology|a dairy farm near Tavistock
lighthouse archives|Nova Scotia|Gordon MacNeil|a retired keeper|the Fundy Lightkeepers' Archive|keepers' logbooks|pages digitised|mould in the paper|a copy stand built from a camera tripod|the foggy months|maritime history|a keeper's cottage at Cape Forchu
typewriter repair|Pune|Vikram Deshpande|a mechanic who learned the trade from his father|the Deccan Typewriter Works|manual typewriters|machines repaired|a lack of spare ribbons|boxes of parts salvaged from government offices|the monsoon|office history|a narrow shop off Laxmi Road
a sourdough bakery cooperative|Portland|Hannah Kessler|a baker and former accountant|the Division Street Bread Cooperative|sourdough loaves|loaves baked each week|the price of flour|a shared starter kept in a walk-in cooler|the winter holidays|small business|a converted tyre shop
volunteer flood warnings|Sirajganj|Rashida Begum|a community health worker|the Jamuna Flood Watch Network|river gauges|households warned|sudden upstream surges|text messages sent from a single shared phone|the monsoon months|disaster resilience|a schoolhouse raised on concrete stilts
rooftop solar cooperatives|Freiburg|Lukas Baumann|an electrician|the Vauban Sun Cooperative|rooftop arrays|megawatt-hours generated|rising panel prices|a monitoring screen in the cooperative's office|the bright days of June|renewable energy|a former barracks in the Vauban district
river clean-ups by kayak|Ljubljana|Maja Kranjc|a kayak instructor|the Ljubljanica River Keepers|kayak patrols|sacks of litter collected|spring floods that wash debris downstream|waterproof bags with numbered tags|the low-water weeks|river ecology|a boathouse below the Trnovo bridge
citrus grafting|Valencia|Vicente Ferrer|an orchard keeper|the Huerta Citrus Heritage Group|old orange varieties|trees grafted|citrus tristeza virus|a grafting knife kept in an oiled leather roll|February|pomology|an orchard at the edge of the huerta
family photo archiving|Manila|Carmela Santos|a photo conservator|the Quiapo Photo Memory Project|family photographs|prints scanned|humidity and silverfish|a flatbed scanner on a folding table|the dry season|visual history|a church hall in Quiapo
cold-water swimming clubs|Reykjavík|Björk Sigurðardóttir|a nurse and swimming coach|the Nauthólsvík Sea Swimmers|weekly sea swims|swims logged|sudden drops in water temperature|a thermometer hung from the end of the pier|the dark months|sports medicine|the geothermal beach at Nauthólsvík
herring smoking|Bornholm|Niels Kofoed|a smokehouse master|the Gudhjem Smokehouse Guild|smoking chimneys|crates of herring smoked|the decline of the Baltic herring catch|alder wood split by hand each morning|the summer season|food heritage|a whitewashed smokehouse at the harbour
wooden church restoration|Maramureș|Ioana Pop|a carpenter and conservator|the Maramureș Wooden Churches Trust|shingled roofs|oak shingles split|rot in the sill beams|an adze handed down from her grandfather|the weeks after harvest|architectural conservation|a village church in Ieud
bat surveys|the Peak District|Rhys Morgan|an ecologist|the Dark Peak Bat Group|roost sites|bat passes recorded|the loss of old barns|ultrasonic detectors that turn calls into sound a person can hear|warm summer evenings|mammal ecology|a limestone dale near Castleton
net mending|Essaouira|Youssef Amrani|a fisherman|the Essaouira Port Net Menders|fishing nets|metres of net mended|cheap synthetic nets that cannot be repaired|a wooden netting needle carved from olive wood|the calm weeks of autumn|fisheries|the quayside by the blue boats
old apple varieties|Herefordshire|Eleanor Pugh|a retired orchard manager|the Marches Orchard Survey|veteran apple trees|varieties identified|mistletoe and canker|a field guide of apple shapes drawn in the 1880s|October|pomology|a cider farm near Much Marcle
`.trim().split('\n').map((line) => {
  const f = line.split('|');
  if (f.length !== 12) throw new Error(`article topic needs 12 fields: ${line}`);
  const [subject, place, person, role, org, things, measure, problem, tool, season, field, venue] = f;
  return { subject, place, person, role, org, things, measure, problem, tool, season, field, venue };
});

const HOOKS = [
  'a quiet revival', 'patience over hype', 'how a small group kept going', 'what the numbers say',
  'lessons from a decade of work', 'the long way round', 'small steps, stubborn people',
  'a craft that refused to disappear', 'counting what matters', 'an unlikely success',
  'the work nobody sees', 'where the volunteers come in',
];

const WEATHER = ['grey', 'windless', 'bright', 'damp', 'bitterly cold', 'humid', 'misty', 'blustery'];
const ROUTINE = [
  'part science and part stubbornness', 'a weekly exercise in humility', 'slower than anyone outside imagines',
  'closer to gardening than to engineering', 'mostly paperwork with short bursts of excitement',
  'a habit more than a job', 'repetitive, and oddly calming',
];

const ARTICLE_SECTIONS = [
  {
    headings: [null],
    sentences: [
      'When {person} first took an interest in {subject} in {place}, almost nobody else was paying attention.',
      'Few people in {place} had heard of {org} until it began publishing its figures in {year}.',
      '{Surname}, {role}, spends most mornings at {venue}, checking the {things} before anyone else arrives.',
      'The story of {subject} in {place} turns out to be less about technology than about patience.',
      'On a {weather} morning in {season}, {person} walks the length of {venue} and counts the {things} by hand.',
      'Ask anyone involved with {org} what keeps them going, and the answer usually involves {colleague}.',
      'For {surname}, {subject} began as a weekend curiosity and slowly became the centre of a working life.',
    ],
  },
  {
    headings: ['How it started', 'Early days', 'The first attempts', 'Beginnings'],
    sentences: [
      'The first attempt, in {year}, was abandoned after {small} months because {problem} proved harder to manage than anyone expected.',
      'Back then the group had {small} volunteers, a borrowed van and no budget worth mentioning.',
      'By {year2}, {org} had grown to {medium} members and was looking after {big} {things} across the region.',
      'Records kept by {colleague} show a steady rise in {measure} every year since the work began.',
      'Much of the early knowledge came from older residents who still remembered how {subject} used to be done.',
      'A local newspaper ran a short piece about the project in {year2}, and the phone did not stop ringing for a week.',
      'Nobody on the founding committee had a background in {field}, which {surname} now calls a blessing in disguise.',
    ],
  },
  {
    headings: ['The daily routine', 'How the work is done', 'Method', 'A typical week'],
    sentences: [
      'The method is simple on paper: {tool} records every change, and the volunteers compare the figures each week.',
      'Most of the hard work happens in {season}, when decisions cannot wait and every pair of hands counts.',
      '{Colleague}, who coordinates the volunteers, describes the routine as {routine}.',
      'Newcomers spend their first month shadowing someone experienced before they are trusted on their own.',
      'Each session ends with a short meeting where problems are written down and assigned to a named person.',
      'The group relies on {tool}, an arrangement that costs little and has proved surprisingly reliable.',
      'Last year the volunteers logged {big} {measure}, a figure that would have seemed absurd at the start.',
    ],
  },
  {
    headings: ['Setbacks', 'What went wrong', 'Hard lessons', 'Obstacles'],
    sentences: [
      'Not everything has gone to plan: {problem} once cost the project nearly {pct} percent of its {things} in a single season.',
      'Funding remains the hardest question, and {org} still depends on small grants and an annual fundraising dinner.',
      'Critics argue that the effort is too small to make a difference, a point {surname} does not entirely dismiss.',
      'There have been arguments, too, about whether the group should accept money from larger organisations.',
      'Insurance costs rose sharply in {year2}, and for a few months it looked as though the whole project might stop.',
      'The hardest lesson, according to {colleague}, was learning to say no to requests the group could not handle.',
    ],
  },
  {
    headings: ['What comes next', 'Looking ahead', 'The next decade', 'Plans'],
    sentences: [
      'The next step is a partnership with schools in {place}, where pupils will help monitor the {things} as part of their science lessons.',
      'If the numbers hold, {org} expects to double its {measure} within {small} years.',
      '{Surname} is already training a successor, a decision that surprised several long-standing members.',
      'A small exhibition about the project is planned for {season} next year, with photographs taken by the volunteers themselves.',
      'Researchers from a nearby university have asked to study the records, which go back more than {decade} years.',
      'For now, the plan is modest: keep the {things} in good order, keep the volunteers happy and keep writing everything down.',
    ],
  },
];

function articleVars(topic, r) {
  const year = r.int(1994, 2012);
  return {
    ...topic,
    Subject: cap(topic.subject),
    Surname: surname(topic.person),
    surname: surname(topic.person),
    colleague: r.pick(NAMES),
    Colleague: null, // set below so the two can differ
    year,
    year2: year + r.int(3, 9),
    small: r.int(3, 9),
    medium: r.int(24, 180),
    big: fmt(r.int(320, 9800)),
    pct: r.int(15, 60),
    decade: r.int(2, 4) * 10,
    weather: r.pick(WEATHER),
    routine: r.pick(ROUTINE),
  };
}

/** An article: title, dek, byline, sections of paragraphs. */
export function article(id, index) {
  const topic = ARTICLE_TOPICS[index % ARTICLE_TOPICS.length];
  const r = rng(`article:${id}`);
  const vars = articleVars(topic, r);
  vars.Colleague = r.pick(NAMES.filter((n) => n !== vars.colleague));
  const sections = ARTICLE_SECTIONS.map((section, i) => {
    const count = i === 0 ? 3 : r.int(3, 4);
    const chosen = r.ordered(section.sentences, count);
    const sentences = chosen.map((t) => fill(t, vars));
    // Two paragraphs per section after the lead, one for the lead.
    const paragraphs = i === 0 ? [sentences.join(' ')] : [sentences.slice(0, 2).join(' '), sentences.slice(2).join(' ')];
    return { heading: r.pick(section.headings), paragraphs };
  });
  const month = r.pick(['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']);
  return {
    genre: 'article',
    title: `${cap(topic.subject)} in ${topic.place}: ${r.pick(HOOKS)}`,
    dek: fill(r.pick([
      'How {org} turned a handful of volunteers into a lasting institution.',
      'A visit to {venue}, where {subject} is a daily routine rather than a slogan.',
      '{Person} on {problem}, {things} and the patience the work demands.',
    ]), { ...vars, Person: topic.person }),
    byline: `By ${r.pick(NAMES)}`,
    date: `${r.int(1, 28)} ${month} ${r.int(2021, 2025)}`,
    sections,
  };
}

// ---------------------------------------------------------------- docs

// lib | purpose | fn | option | option2 | file | concept | error | lang | install
const DOCS_TOPICS = `
tidewater|loads layered configuration files and merges them in a predictable order|loadConfig|strictKeys|envPrefix|tidewater.config.json|layer|E_LAYER_CYCLE|TypeScript|npm install tidewater
quillmark|turns annotated source comments into a searchable reference site|buildReference|includePrivate|themeDir|quillmark.toml|annotation|E_ORPHAN_TAG|Rust|cargo add quillmark
brambleq|runs background jobs with retries and a persistent queue on SQLite|enqueue|maxAttempts|visibilityTimeout|bramble.yaml|worker|E_LEASE_EXPIRED|Python|pip install brambleq
lanternfs|mounts object storage buckets as a read-only file system with a local cache|mountBucket|cacheSizeMb|prefetchDepth|lantern.conf|mount|E_STALE_HANDLE|Go|go install lanternfs
marrowdb|embeds a small columnar database for analytics inside a desktop application|openStore|pageSize|compression|marrow.ini|segment|E_SEGMENT_LOCKED|C++|vcpkg install marrowdb
pebblecli|builds friendly command-line interfaces from a single declarative schema|defineCommand|allowUnknown|helpWidth|pebble.schema.json|subcommand|E_DUPLICATE_FLAG|JavaScript|npm install pebblecli
heronlog|ships structured application logs to several destinations with back-pressure|createLogger|bufferLimit|flushIntervalMs|heron.toml|sink|E_SINK_BACKPRESSURE|Kotlin|gradle add heronlog
saffronui|renders accessible form components with validation and localisation built in|createForm|validateOn|messagesLocale|saffron.config.js|field|E_UNKNOWN_RULE|TypeScript|npm install saffronui
kestrelsync|keeps two directories in sync over SSH with resumable transfers|syncPair|checksumMode|bandwidthLimit|kestrel.sync|pair|E_REMOTE_MOVED|Rust|cargo install kestrelsync
`.trim().split('\n').map((line) => {
  const f = line.split('|');
  if (f.length !== 10) throw new Error(`docs topic needs 10 fields: ${line}`);
  const [lib, purpose, fn, option, option2, file, concept, error, lang, install] = f;
  return { lib, purpose, fn, option, option2, file, concept, error, lang, install };
});

const DOCS_SECTIONS = [
  {
    heading: 'Overview',
    sentences: [
      'The {lib} library {purpose}.',
      'It is written in {lang} and has no runtime dependencies beyond the standard library.',
      'Each {concept} is described once and reused wherever it is referenced, which keeps large projects readable.',
      'Version {version} is the current stable release, and the project follows semantic versioning strictly.',
      'The design favours explicit behaviour over clever defaults, so surprises are rare once the basics are understood.',
    ],
  },
  {
    heading: 'Installation',
    sentences: [
      'Install the package with the command below; no native toolchain is required on supported platforms.',
      'The installer checks the platform and prints a short warning when an optional feature is unavailable.',
      'Pin the exact version in your lock file, because minor releases occasionally change default values.',
    ],
    code: '{install}',
  },
  {
    heading: 'Basic usage',
    sentences: [
      'Call {fn} once at start-up and keep the returned handle for the lifetime of the process.',
      'The handle is safe to share between threads, and every method on it returns a descriptive error instead of throwing.',
      'Settings are read from {file} in the working directory unless another path is passed explicitly.',
      'A {concept} that cannot be resolved stops start-up with a message naming the file and line.',
    ],
    code: 'const handle = {fn}({ {option}: true });\nhandle.on("ready", () => console.log("{lib} is ready"));',
  },
  {
    heading: 'Options',
    sentences: [
      'Options can be given in code or in {file}; values passed in code always win.',
      'Unknown options are reported as warnings rather than errors, unless {option} is switched on.',
    ],
    list: [
      '{option}: reject any key that the schema does not describe (default false)',
      '{option2}: tune how {lib} behaves under load (default {default})',
      'logLevel: one of error, warn, info or debug (default warn)',
    ],
  },
  {
    heading: 'Troubleshooting',
    sentences: [
      'The error {error} means that a {concept} refers to itself, directly or through another {concept}.',
      'Run the command again with logLevel set to debug to see every file {lib} opened and in which order.',
      'If start-up is slow, check whether {option2} was raised far above its default during an earlier experiment.',
      'Most reported problems disappear after deleting the local cache directory and starting {lib} once more.',
    ],
  },
];

/** A documentation page of a fictional library. */
export function docs(id, index) {
  const topic = DOCS_TOPICS[index % DOCS_TOPICS.length];
  const r = rng(`docs:${id}`);
  const vars = {
    ...topic,
    version: `${r.int(1, 6)}.${r.int(0, 12)}`,
    default: r.pick(['30', '256', '4', '1000', 'auto']),
  };
  const sections = DOCS_SECTIONS.map((section) => {
    const n = Math.min(section.sentences.length, r.int(3, 4));
    const chosen = section.heading === 'Overview' ? [section.sentences[0], ...r.ordered(section.sentences.slice(1), n - 1)] : r.ordered(section.sentences, n);
    const sentences = chosen.map((t) => fill(t, vars));
    const half = Math.ceil(sentences.length / 2);
    return {
      heading: section.heading,
      paragraphs: [sentences.slice(0, half).join(' '), sentences.slice(half).join(' ')].filter(Boolean),
      code: section.code ? fill(section.code, vars) : undefined,
      list: section.list ? section.list.map((t) => fill(t, vars)) : undefined,
    };
  });
  return {
    genre: 'docs',
    title: `${cap(topic.lib)} ${vars.version} documentation: getting started`,
    dek: `Everything you need to set up ${topic.lib} in a new project.`,
    nav: ['Getting started', 'Configuration', 'API reference', 'Migration guide', 'Changelog'],
    sections,
  };
}

// ---------------------------------------------------------------- products

// name | category | maker | material | weight | use | feature | feature2 | colours | price
const PRODUCT_TOPICS = `
Halden Two-Person Trekking Tent|tent|Northfold Outfitters|ripstop nylon with a silicone coating|1.9 kg|three-season backpacking|two side doors, each with its own vestibule|colour-coded poles that make pitching in the dark easier|forest green, sand|389.00
Corvo Pour-Over Coffee Kettle|kettle|Atelier Corvo|brushed stainless steel|0.8 kg|slow pour-over brewing at home|a gooseneck spout that pours a thin, steady stream|a thermometer set into the lid|matte black, steel|74.50
Ridgeway Waxed Canvas Rucksack|rucksack|Ridgeway Leatherworks|waxed cotton canvas with vegetable-tanned leather trim|1.2 kg|daily commuting and weekend walks|a padded laptop sleeve that fits machines up to sixteen inches|brass buckles that can be replaced without stitching|olive, tan, navy|165.00
Lumen Desk Lamp with Adjustable Arm|desk lamp|Studio Lumen|powder-coated aluminium|1.4 kg|long evenings of reading and drawing|a dimmer with six warm and cool light settings|a weighted base that keeps the arm steady when fully extended|white, graphite|129.00
Fjordline Merino Base Layer|base layer|Fjordline Wool|fine merino wool|0.2 kg|cold-weather hiking and ski touring|flat seams that do not rub under a backpack strap|a longer back panel that stays tucked in|charcoal, heather blue|89.00
Tessera Cast Iron Casserole|casserole|Tessera Kitchenworks|enamelled cast iron|4.6 kg|slow braises and bread baking|a tight lid with small studs that return moisture to the food|an enamel finish that needs no seasoning|cherry red, slate, cream|215.00
Aria Folding Electric Bike|folding bike|Aria Mobility|aluminium frame with a magnesium hinge|17.5 kg|short commutes that combine cycling and trains|a removable battery that charges from a standard socket in four hours|a fold that takes about fifteen seconds once practised|pearl white, dark grey|1490.00
Juniper Noise-Cancelling Headphones|headphones|Juniper Audio|recycled plastic and memory foam|0.25 kg|travel and open-plan offices|adaptive noise cancelling that adjusts to the room|a physical volume dial on the right ear cup|black, stone|249.00
Basalt Stoneware Dinner Set|dinner set|Basalt Ceramics|hand-glazed stoneware|7.2 kg|everyday meals for four people|a reactive glaze so that no two plates look exactly alike|a rim that stacks neatly without chipping|speckled white, moss|178.00
`.trim().split('\n').map((line) => {
  const f = line.split('|');
  if (f.length !== 10) throw new Error(`product topic needs 10 fields: ${line}`);
  const [name, category, maker, material, weight, use, feature, feature2, colours, price] = f;
  return { name, category, maker, material, weight, use, feature, feature2, colours, price };
});

const PRODUCT_DESC = [
  'The {name} {is} made by {maker} for {use}.',
  'Its body is {material}, chosen because it holds up to years of use without looking tired.',
  'The feature owners mention first is {feature}.',
  'Less obvious, but just as useful, is {feature2}.',
  'At {weight}, {this} {category} {is} light enough to live on a shelf or in a bag without complaint.',
  'Every unit is inspected by hand before it leaves the workshop, and the inspector signs the card in the box.',
  'Spare parts stay available for at least {years} years, and repairs are handled by the same team that builds them.',
  'The {category} {ships} in recycled packaging with no plastic fillers.',
];

const REVIEW_LINES = [
  'Bought this to replace a cheaper {category} that lasted barely a year, and the difference is obvious.',
  'Exactly as described; {feature2} is the detail I did not know I needed.',
  'Slightly heavier than I expected, but it feels built to last and the finish is lovely.',
  'Delivery took a little longer than promised, although the {category} itself is excellent.',
  'I use it every single day and it still looks new after several months.',
  'Customer service answered my question about {material} within an hour.',
];

/** A shop product page. */
export function product(id, index) {
  const topic = PRODUCT_TOPICS[index % PRODUCT_TOPICS.length];
  const r = rng(`product:${id}`);
  const plural = /s$/.test(topic.category);
  const vars = { ...topic, years: r.int(5, 15), weeks: r.int(2, 8), is: plural ? 'are' : 'is', ships: plural ? 'ship' : 'ships', this: plural ? 'these' : 'this' };
  const desc = [PRODUCT_DESC[0], ...r.ordered(PRODUCT_DESC.slice(1), 5)].map((t) => fill(t, vars));
  const lines = r.sample(REVIEW_LINES, 6).map((t) => fill(t, vars));
  const reviews = r.sample(NAMES, 3).map((author, i) => ({
    author,
    stars: r.int(3, 5),
    text: lines.slice(2 * i, 2 * i + 2).join(' '),
  }));
  return {
    genre: 'product',
    title: topic.name,
    price: `€${topic.price}`,
    sections: [
      { heading: 'Description', paragraphs: [desc.slice(0, 3).join(' '), desc.slice(3).join(' ')] },
      {
        heading: 'Shipping and returns',
        paragraphs: [fill(r.pick([
          'Orders placed before two in the afternoon leave the warehouse the same day, and returns are free within {weeks} weeks.',
          'Standard delivery takes three to five working days; unused items can be returned within {weeks} weeks for a full refund.',
        ]), vars)],
      },
    ],
    specs: [
      ['Maker', topic.maker],
      ['Material', topic.material],
      ['Weight', topic.weight],
      ['Colours', topic.colours],
      ['Warranty', `${r.int(2, 5)} years`],
    ],
    reviews,
  };
}

// ---------------------------------------------------------------- dashboards

// org | metric | unit | regions (comma) | owner | incident
const DASHBOARD_TOPICS = `
Harbor Logistics|on-time deliveries|shipments|North Coast,Inland Valley,Metro East,Southern Ports|the dispatch team|a crane outage at the container terminal
Greenleaf Clinics|same-day appointments|appointments|Riverside,Old Town,Hillcrest,Lakeshore|the patient access team|a booking system slowdown on Monday morning
Copperline Broadband|resolved support tickets|tickets|Highlands,Central Plains,Coastal Belt,Capital District|the network operations centre|a fibre cut near the Capital District exchange
Orchard Street Bakeries|loaves sold before noon|loaves|Market Square,Station Road,University Quarter,Harbourside|the store operations group|an oven fault at the Station Road branch
Blue Heron Transit|trips completed on schedule|trips|Route 4,Route 9,Route 12,Route 21|the service planning office|a signal failure on the river bridge
Pinecrest Libraries|items borrowed|loans|Central Library,Eastgate,Millbrook,Westfield|the lending services team|a catalogue outage during the weekend upgrade
Summit Solar Installers|installations signed off|installations|Alpine Region,Lowlands,Foothills,Northern Reach|the field operations team|a delayed shipment of inverters
Riverbend Water Utility|leaks repaired within 48 hours|repairs|Zone A,Zone B,Zone C,Zone D|the maintenance crews|a burst main under the ring road
`.trim().split('\n').map((line) => {
  const f = line.split('|');
  if (f.length !== 6) throw new Error(`dashboard topic needs 6 fields: ${line}`);
  const [org, metric, unit, regions, owner, incident] = f;
  return { org, metric, unit, regions: regions.split(','), owner, incident };
});

const DASH_SUMMARY = [
  '{Metric} totalled {value} in {period}, up {change} percent on the previous week.',
  '{Best} led every region for the {nth} week running, while {worst} fell short of its target.',
  'The main drag on the numbers was {incident}, which {owner} resolved within {hours} hours.',
  'Excluding that incident, performance in {worst} would have matched the network average.',
  'Staffing was {staffing}, and overtime stayed within the budget agreed at the start of the quarter.',
  'Customer complaints dropped to {complaints}, the lowest figure recorded since the dashboard went live.',
  '{Owner} will review the {worst} figures on Thursday and report back before the monthly board meeting.',
  'Forecasts for next week assume no repeat of {incident} and normal seasonal demand.',
];

/** An operations dashboard: summary prose, metric cards, a table by region. */
export function dashboard(id, index) {
  const topic = DASHBOARD_TOPICS[index % DASHBOARD_TOPICS.length];
  const r = rng(`dashboard:${id}`);
  const rows = topic.regions.map((region) => [region, r.int(800, 9600), r.int(-12, 18), r.int(72, 99)]);
  const sorted = rows.slice().sort((a, b) => b[3] - a[3]);
  const total = rows.reduce((s, row) => s + row[1], 0);
  const vars = {
    ...topic,
    Metric: cap(topic.metric),
    Owner: cap(topic.owner),
    value: fmt(total),
    period: `the week of ${r.int(2, 27)} ${r.pick(['March', 'April', 'May', 'June', 'September', 'October'])}`,
    change: r.int(2, 14),
    Best: sorted[0][0],
    worst: sorted[sorted.length - 1][0],
    nth: r.pick(['second', 'third', 'fourth', 'fifth']),
    hours: r.int(3, 30),
    staffing: r.pick(['close to plan', 'two people short in the evenings', 'slightly above plan because of seasonal hires']),
    complaints: r.int(11, 90),
  };
  const lines = [DASH_SUMMARY[0], DASH_SUMMARY[1], DASH_SUMMARY[2], ...r.ordered(DASH_SUMMARY.slice(3), 4)].map((t) => fill(t, vars));
  return {
    genre: 'dashboard',
    title: `${topic.org}: weekly operations dashboard`,
    dek: `Summary for ${vars.period}, prepared for ${topic.owner}.`,
    sections: [
      { heading: 'Summary', paragraphs: [lines.slice(0, 3).join(' '), lines.slice(3).join(' ')] },
    ],
    cards: [
      [cap(topic.metric), fmt(total)],
      ['Week-on-week change', `+${vars.change}%`],
      ['Best region', sorted[0][0]],
      ['Complaints', String(vars.complaints)],
    ],
    table: {
      caption: `${cap(topic.metric)} by region`,
      head: ['Region', cap(topic.unit), 'Change (%)', 'Target met (%)'],
      rows: rows.map(([a, b, c, d]) => [a, fmt(b), (c > 0 ? '+' : '') + c, String(d)]),
    },
  };
}

/** The document of a page: `genre` is article, docs, product or dashboard. */
export function makeDoc(genre, id, index) {
  switch (genre) {
    case 'article': return article(id, index);
    case 'docs': return docs(id, index);
    case 'product': return product(id, index);
    case 'dashboard': return dashboard(id, index);
    default: throw new Error(`unknown genre ${genre}`);
  }
}

/** Every sentence of a document's prose (paragraphs only), for snippet choice. */
export function sentences(doc) {
  const out = [];
  for (const section of doc.sections) {
    for (const p of section.paragraphs) {
      // A sentence ends at . ! or ? before a space (not inside "tidewater.config.json").
      for (const s of p.split(/(?<=[.!?])\s+/)) if (s.trim()) out.push(s.trim());
    }
  }
  return out;
}

/** All the visible text of a document, as one string (uniqueness checks). */
export function allText(doc) {
  const parts = [doc.title, doc.dek || '', doc.byline || ''];
  for (const s of doc.sections) parts.push(s.heading || '', ...s.paragraphs, ...(s.list || []), s.code || '');
  for (const r of doc.reviews || []) parts.push(r.author, r.text);
  return parts.join('\n');
}

export const TOPIC_COUNTS = {
  article: ARTICLE_TOPICS.length,
  docs: DOCS_TOPICS.length,
  product: PRODUCT_TOPICS.length,
  dashboard: DASHBOARD_TOPICS.length,
};
