"""The Variant binary-encoding check (engine.features.variant_encoding): values Spark wrote are accepted,
hand-made values of the spec's other shapes too, and each kind of malformed value is refused with a
reason, by `check_value` and by `check_array` (which names the column and the row).

The known-good vectors were made once with pyspark 4.2.0 (master local[1]), `spark.sql(<sql>).toArrow()`,
and are hard-coded here as hex (metadata, value), each under the SQL that made it; `<expr>` in a comment
is the Python expression whose text was spliced into the SQL literal. The golden table
tests/compat/golden/spark-variant-checkpoint (written by Spark 4.0) is checked as a whole as well."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.features.variant_encoding import MAX_DEPTH, check_array, check_value

GOLDEN = Path(__file__).parents[2] / "compat" / "golden" / "spark-variant-checkpoint"

# (name, metadata hex, value hex), each made by the Spark SQL in the comment above it.
SPARK_VECTORS: list[tuple[str, str, str]] = [
    # select parse_json('null') as v
    ("null", "010000", "00"),
    # select parse_json('true') as v
    ("true", "010000", "04"),
    # select parse_json('false') as v
    ("false", "010000", "08"),
    # select parse_json('1') as v
    ("int8", "010000", "0c01"),
    # select parse_json('-128') as v
    ("int8-min", "010000", "0c80"),
    # select parse_json('300') as v
    ("int16", "010000", "102c01"),
    # select parse_json('70000') as v
    ("int32", "010000", "1470110100"),
    # select parse_json('5000000000') as v
    ("int64", "010000", "1800f2052a01000000"),
    # select parse_json('-9223372036854775808') as v
    ("int64-min", "010000", "180000000000000080"),
    # select parse_json('1.5') as v
    ("decimal4", "010000", "20010f000000"),
    # select parse_json('12345678901.25') as v
    ("decimal8", "010000", "2402cd04fb711f010000"),
    # select parse_json('1234567890123456789.5') as v
    ("decimal16", "010000", "2801d70a1feb8ca954ab0000000000000000"),
    # select parse_json('1e10') as v
    ("double-1e10", "010000", "1c000000205fa00242"),
    # select parse_json('1.5e300') as v
    ("double-1.5e300", "010000", "1c355800662deb417e"),
    # select parse_json('-0.0') as v
    ("decimal-negative-zero", "010000", "200100000000"),
    # select parse_json('"short"') as v
    ("short-string", "010000", "1573686f7274"),
    # select parse_json(<json.dumps('x' * 100)>) as v
    (
        "long-string",
        "010000",
        (
            "4064000000787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878"
            "7878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878"
            "7878787878"
        ),
    ),
    # select parse_json('""') as v
    ("empty-string", "010000", "01"),
    # select parse_json('{}') as v
    ("empty-object", "010000", "020000"),
    # select parse_json('[]') as v
    ("empty-array", "010000", "030000"),
    # select parse_json('{"c": 3, "b": 2, "a": 1}') as v
    ("object-keys-out-of-order", "010300010203636261", "0203020100040200060c030c020c01"),
    # select parse_json('{"a": {"b": {"c": [1, "two", 3.5, null, true]}}, "z": [], "y": {}}') as v
    (
        "nested-object",
        "01050001020304056162637a79",
        ("020300040300232026020101001b020102001603050002060c0d0e0c010d74776f2001230000000004030000020000"),
    ),
    # select parse_json('[1, "a", [2, [3, {"k": "v"}]], {"x": null}]') as v
    (
        "nested-array",
        "01020001026b78",
        ("0304000204191f0c01056103020002100c0203020002090c0302010000020576020101000100"),
    ),
    # select parse_json('{"ключ": "значение ✓", "emoji": "😀", "日本": ["語", "é"]}') as v
    (
        "unicode",
        ("010300080d13d0bad0bbd18ed187656d6f6a69e697a5e69cac"),
        ("020301000215001a2651d0b7d0bdd0b0d187d0b5d0bdd0b8d0b520e29c9311f09f988003020004070de8aa9e09c3a9"),
    ),
    # select parse_json(<'{' + ', '.join(f'"field_{i}": "v{i}"' for i in range(70)) + '}'>) as v
    (
        "object-70-fields",
        (
            "414600000007000e0015001c0023002a00310038003f0046004e0056005e0066006e0076007e0086008e0096009e00a600ae"
            "00b600be00c600ce00d600de00e600ee00f600fe0006010e0116011e0126012e0136013e0146014e0156015e0166016e0176"
            "017e0186018e0196019e01a601ae01b601be01c601ce01d601de01e601ee01f601fe0106020e0216021e0226026669656c64"
            "5f306669656c645f316669656c645f326669656c645f336669656c645f346669656c645f356669656c645f366669656c645f"
            "376669656c645f386669656c645f396669656c645f31306669656c645f31316669656c645f31326669656c645f3133666965"
            "6c645f31346669656c645f31356669656c645f31366669656c645f31376669656c645f31386669656c645f31396669656c64"
            "5f32306669656c645f32316669656c645f32326669656c645f32336669656c645f32346669656c645f32356669656c645f32"
            "366669656c645f32376669656c645f32386669656c645f32396669656c645f33306669656c645f33316669656c645f333266"
            "69656c645f33336669656c645f33346669656c645f33356669656c645f33366669656c645f33376669656c645f3338666965"
            "6c645f33396669656c645f34306669656c645f34316669656c645f34326669656c645f34336669656c645f34346669656c64"
            "5f34356669656c645f34366669656c645f34376669656c645f34386669656c645f34396669656c645f35306669656c645f35"
            "316669656c645f35326669656c645f35336669656c645f35346669656c645f35356669656c645f35366669656c645f353766"
            "69656c645f35386669656c645f35396669656c645f36306669656c645f36316669656c645f36326669656c645f3633666965"
            "6c645f36346669656c645f36356669656c645f36366669656c645f36376669656c645f36386669656c645f3639"
        ),
        (
            "064600010a0b0c0d0e0f10111213021415161718191a1b1c1d031e1f20212223242526270428292a2b2c2d2e2f3031053233"
            "3435363738393a3b063c3d3e3f404142434445070809000003001e00220026002a002e00320036003a003e00420006004600"
            "4a004e00520056005a005e00620066006a0009006e00720076007a007e00820086008a008e0092000c0096009a009e00a200"
            "a600aa00ae00b200b600ba000f00be00c200c600ca00ce00d200d600da00de00e2001200e600ea00ee00f200f600fa00fe00"
            "020106010a01150018001b000e010976300976310976320976330976340976350976360976370976380976390d7631300d76"
            "31310d7631320d7631330d7631340d7631350d7631360d7631370d7631380d7631390d7632300d7632310d7632320d763233"
            "0d7632340d7632350d7632360d7632370d7632380d7632390d7633300d7633310d7633320d7633330d7633340d7633350d76"
            "33360d7633370d7633380d7633390d7634300d7634310d7634320d7634330d7634340d7634350d7634360d7634370d763438"
            "0d7634390d7635300d7635310d7635320d7635330d7635340d7635350d7635360d7635370d7635380d7635390d7636300d76"
            "36310d7636320d7636330d7636340d7636350d7636360d7636370d7636380d763639"
        ),
    ),
    # select parse_json(<'{' + ', '.join(f'"k{i:03d}": {i}' for i in range(300)) + '}'>) as v
    (
        "object-300-fields",
        (
            "412c010000040008000c001000140018001c002000240028002c003000340038003c004000440048004c005000540058005c"
            "006000640068006c007000740078007c008000840088008c009000940098009c00a000a400a800ac00b000b400b800bc00c0"
            "00c400c800cc00d000d400d800dc00e000e400e800ec00f000f400f800fc000001040108010c011001140118011c01200124"
            "0128012c013001340138013c014001440148014c015001540158015c016001640168016c017001740178017c018001840188"
            "018c019001940198019c01a001a401a801ac01b001b401b801bc01c001c401c801cc01d001d401d801dc01e001e401e801ec"
            "01f001f401f801fc010002040208020c021002140218021c022002240228022c023002340238023c024002440248024c0250"
            "02540258025c026002640268026c027002740278027c028002840288028c029002940298029c02a002a402a802ac02b002b4"
            "02b802bc02c002c402c802cc02d002d402d802dc02e002e402e802ec02f002f402f802fc020003040308030c031003140318"
            "031c032003240328032c033003340338033c034003440348034c035003540358035c036003640368036c037003740378037c"
            "038003840388038c039003940398039c03a003a403a803ac03b003b403b803bc03c003c403c803cc03d003d403d803dc03e0"
            "03e403e803ec03f003f403f803fc030004040408040c041004140418041c042004240428042c043004340438043c04400444"
            "0448044c045004540458045c046004640468046c047004740478047c048004840488048c049004940498049c04a004a404a8"
            "04ac04b0046b3030306b3030316b3030326b3030336b3030346b3030356b3030366b3030376b3030386b3030396b3031306b"
            "3031316b3031326b3031336b3031346b3031356b3031366b3031376b3031386b3031396b3032306b3032316b3032326b3032"
            "336b3032346b3032356b3032366b3032376b3032386b3032396b3033306b3033316b3033326b3033336b3033346b3033356b"
            "3033366b3033376b3033386b3033396b3034306b3034316b3034326b3034336b3034346b3034356b3034366b3034376b3034"
            "386b3034396b3035306b3035316b3035326b3035336b3035346b3035356b3035366b3035376b3035386b3035396b3036306b"
            "3036316b3036326b3036336b3036346b3036356b3036366b3036376b3036386b3036396b3037306b3037316b3037326b3037"
            "336b3037346b3037356b3037366b3037376b3037386b3037396b3038306b3038316b3038326b3038336b3038346b3038356b"
            "3038366b3038376b3038386b3038396b3039306b3039316b3039326b3039336b3039346b3039356b3039366b3039376b3039"
            "386b3039396b3130306b3130316b3130326b3130336b3130346b3130356b3130366b3130376b3130386b3130396b3131306b"
            "3131316b3131326b3131336b3131346b3131356b3131366b3131376b3131386b3131396b3132306b3132316b3132326b3132"
            "336b3132346b3132356b3132366b3132376b3132386b3132396b3133306b3133316b3133326b3133336b3133346b3133356b"
            "3133366b3133376b3133386b3133396b3134306b3134316b3134326b3134336b3134346b3134356b3134366b3134376b3134"
            "386b3134396b3135306b3135316b3135326b3135336b3135346b3135356b3135366b3135376b3135386b3135396b3136306b"
            "3136316b3136326b3136336b3136346b3136356b3136366b3136376b3136386b3136396b3137306b3137316b3137326b3137"
            "336b3137346b3137356b3137366b3137376b3137386b3137396b3138306b3138316b3138326b3138336b3138346b3138356b"
            "3138366b3138376b3138386b3138396b3139306b3139316b3139326b3139336b3139346b3139356b3139366b3139376b3139"
            "386b3139396b3230306b3230316b3230326b3230336b3230346b3230356b3230366b3230376b3230386b3230396b3231306b"
            "3231316b3231326b3231336b3231346b3231356b3231366b3231376b3231386b3231396b3232306b3232316b3232326b3232"
            "336b3232346b3232356b3232366b3232376b3232386b3232396b3233306b3233316b3233326b3233336b3233346b3233356b"
            "3233366b3233376b3233386b3233396b3234306b3234316b3234326b3234336b3234346b3234356b3234366b3234376b3234"
            "386b3234396b3235306b3235316b3235326b3235336b3235346b3235356b3235366b3235376b3235386b3235396b3236306b"
            "3236316b3236326b3236336b3236346b3236356b3236366b3236376b3236386b3236396b3237306b3237316b3237326b3237"
            "336b3237346b3237356b3237366b3237376b3237386b3237396b3238306b3238316b3238326b3238336b3238346b3238356b"
            "3238366b3238376b3238386b3238396b3239306b3239316b3239326b3239336b3239346b3239356b3239366b3239376b3239"
            "386b323939"
        ),
        (
            "562c01000000000100020003000400050006000700080009000a000b000c000d000e000f0010001100120013001400150016"
            "001700180019001a001b001c001d001e001f0020002100220023002400250026002700280029002a002b002c002d002e002f"
            "0030003100320033003400350036003700380039003a003b003c003d003e003f004000410042004300440045004600470048"
            "0049004a004b004c004d004e004f0050005100520053005400550056005700580059005a005b005c005d005e005f00600061"
            "00620063006400650066006700680069006a006b006c006d006e006f0070007100720073007400750076007700780079007a"
            "007b007c007d007e007f0080008100820083008400850086008700880089008a008b008c008d008e008f0090009100920093"
            "009400950096009700980099009a009b009c009d009e009f00a000a100a200a300a400a500a600a700a800a900aa00ab00ac"
            "00ad00ae00af00b000b100b200b300b400b500b600b700b800b900ba00bb00bc00bd00be00bf00c000c100c200c300c400c5"
            "00c600c700c800c900ca00cb00cc00cd00ce00cf00d000d100d200d300d400d500d600d700d800d900da00db00dc00dd00de"
            "00df00e000e100e200e300e400e500e600e700e800e900ea00eb00ec00ed00ee00ef00f000f100f200f300f400f500f600f7"
            "00f800f900fa00fb00fc00fd00fe00ff0000010101020103010401050106010701080109010a010b010c010d010e010f0110"
            "011101120113011401150116011701180119011a011b011c011d011e011f0120012101220123012401250126012701280129"
            "012a012b01000002000400060008000a000c000e00100012001400160018001a001c001e00200022002400260028002a002c"
            "002e00300032003400360038003a003c003e00400042004400460048004a004c004e00500052005400560058005a005c005e"
            "00600062006400660068006a006c006e00700072007400760078007a007c007e00800082008400860088008a008c008e0090"
            "0092009400960098009a009c009e00a000a200a400a600a800aa00ac00ae00b000b200b400b600b800ba00bc00be00c000c2"
            "00c400c600c800ca00cc00ce00d000d200d400d600d800da00dc00de00e000e200e400e600e800ea00ec00ee00f000f200f4"
            "00f600f800fa00fc00fe0000010301060109010c010f011201150118011b011e012101240127012a012d0130013301360139"
            "013c013f014201450148014b014e015101540157015a015d0160016301660169016c016f017201750178017b017e01810184"
            "0187018a018d0190019301960199019c019f01a201a501a801ab01ae01b101b401b701ba01bd01c001c301c601c901cc01cf"
            "01d201d501d801db01de01e101e401e701ea01ed01f001f301f601f901fc01ff010202050208020b020e021102140217021a"
            "021d0220022302260229022c022f023202350238023b023e024102440247024a024d0250025302560259025c025f02620265"
            "0268026b026e027102740277027a027d0280028302860289028c028f029202950298029b029e02a102a402a702aa02ad02b0"
            "02b302b602b902bc02bf02c202c502c802cb02ce02d102d402d702da02dd02e002e302e602e902ec02ef02f202f502f802fb"
            "02fe02010304030c000c010c020c030c040c050c060c070c080c090c0a0c0b0c0c0c0d0c0e0c0f0c100c110c120c130c140c"
            "150c160c170c180c190c1a0c1b0c1c0c1d0c1e0c1f0c200c210c220c230c240c250c260c270c280c290c2a0c2b0c2c0c2d0c"
            "2e0c2f0c300c310c320c330c340c350c360c370c380c390c3a0c3b0c3c0c3d0c3e0c3f0c400c410c420c430c440c450c460c"
            "470c480c490c4a0c4b0c4c0c4d0c4e0c4f0c500c510c520c530c540c550c560c570c580c590c5a0c5b0c5c0c5d0c5e0c5f0c"
            "600c610c620c630c640c650c660c670c680c690c6a0c6b0c6c0c6d0c6e0c6f0c700c710c720c730c740c750c760c770c780c"
            "790c7a0c7b0c7c0c7d0c7e0c7f108000108100108200108300108400108500108600108700108800108900108a00108b0010"
            "8c00108d00108e00108f00109000109100109200109300109400109500109600109700109800109900109a00109b00109c00"
            "109d00109e00109f0010a00010a10010a20010a30010a40010a50010a60010a70010a80010a90010aa0010ab0010ac0010ad"
            "0010ae0010af0010b00010b10010b20010b30010b40010b50010b60010b70010b80010b90010ba0010bb0010bc0010bd0010"
            "be0010bf0010c00010c10010c20010c30010c40010c50010c60010c70010c80010c90010ca0010cb0010cc0010cd0010ce00"
            "10cf0010d00010d10010d20010d30010d40010d50010d60010d70010d80010d90010da0010db0010dc0010dd0010de0010df"
            "0010e00010e10010e20010e30010e40010e50010e60010e70010e80010e90010ea0010eb0010ec0010ed0010ee0010ef0010"
            "f00010f10010f20010f30010f40010f50010f60010f70010f80010f90010fa0010fb0010fc0010fd0010fe0010ff00100001"
            "100101100201100301100401100501100601100701100801100901100a01100b01100c01100d01100e01100f011010011011"
            "01101201101301101401101501101601101701101801101901101a01101b01101c01101d01101e01101f0110200110210110"
            "2201102301102401102501102601102701102801102901102a01102b01"
        ),
    ),
    # select parse_json(<'[' + ', '.join(str(i) for i in range(300)) + ']'>) as v
    (
        "array-300-elements",
        "010000",
        (
            "172c010000000002000400060008000a000c000e00100012001400160018001a001c001e00200022002400260028002a002c"
            "002e00300032003400360038003a003c003e00400042004400460048004a004c004e00500052005400560058005a005c005e"
            "00600062006400660068006a006c006e00700072007400760078007a007c007e00800082008400860088008a008c008e0090"
            "0092009400960098009a009c009e00a000a200a400a600a800aa00ac00ae00b000b200b400b600b800ba00bc00be00c000c2"
            "00c400c600c800ca00cc00ce00d000d200d400d600d800da00dc00de00e000e200e400e600e800ea00ec00ee00f000f200f4"
            "00f600f800fa00fc00fe0000010301060109010c010f011201150118011b011e012101240127012a012d0130013301360139"
            "013c013f014201450148014b014e015101540157015a015d0160016301660169016c016f017201750178017b017e01810184"
            "0187018a018d0190019301960199019c019f01a201a501a801ab01ae01b101b401b701ba01bd01c001c301c601c901cc01cf"
            "01d201d501d801db01de01e101e401e701ea01ed01f001f301f601f901fc01ff010202050208020b020e021102140217021a"
            "021d0220022302260229022c022f023202350238023b023e024102440247024a024d0250025302560259025c025f02620265"
            "0268026b026e027102740277027a027d0280028302860289028c028f029202950298029b029e02a102a402a702aa02ad02b0"
            "02b302b602b902bc02bf02c202c502c802cb02ce02d102d402d702da02dd02e002e302e602e902ec02ef02f202f502f802fb"
            "02fe02010304030c000c010c020c030c040c050c060c070c080c090c0a0c0b0c0c0c0d0c0e0c0f0c100c110c120c130c140c"
            "150c160c170c180c190c1a0c1b0c1c0c1d0c1e0c1f0c200c210c220c230c240c250c260c270c280c290c2a0c2b0c2c0c2d0c"
            "2e0c2f0c300c310c320c330c340c350c360c370c380c390c3a0c3b0c3c0c3d0c3e0c3f0c400c410c420c430c440c450c460c"
            "470c480c490c4a0c4b0c4c0c4d0c4e0c4f0c500c510c520c530c540c550c560c570c580c590c5a0c5b0c5c0c5d0c5e0c5f0c"
            "600c610c620c630c640c650c660c670c680c690c6a0c6b0c6c0c6d0c6e0c6f0c700c710c720c730c740c750c760c770c780c"
            "790c7a0c7b0c7c0c7d0c7e0c7f108000108100108200108300108400108500108600108700108800108900108a00108b0010"
            "8c00108d00108e00108f00109000109100109200109300109400109500109600109700109800109900109a00109b00109c00"
            "109d00109e00109f0010a00010a10010a20010a30010a40010a50010a60010a70010a80010a90010aa0010ab0010ac0010ad"
            "0010ae0010af0010b00010b10010b20010b30010b40010b50010b60010b70010b80010b90010ba0010bb0010bc0010bd0010"
            "be0010bf0010c00010c10010c20010c30010c40010c50010c60010c70010c80010c90010ca0010cb0010cc0010cd0010ce00"
            "10cf0010d00010d10010d20010d30010d40010d50010d60010d70010d80010d90010da0010db0010dc0010dd0010de0010df"
            "0010e00010e10010e20010e30010e40010e50010e60010e70010e80010e90010ea0010eb0010ec0010ed0010ee0010ef0010"
            "f00010f10010f20010f30010f40010f50010f60010f70010f80010f90010fa0010fb0010fc0010fd0010fe0010ff00100001"
            "100101100201100301100401100501100601100701100801100901100a01100b01100c01100d01100e01100f011010011011"
            "01101201101301101401101501101601101701101801101901101a01101b01101c01101d01101e01101f0110200110210110"
            "2201102301102401102501102601102701102801102901102a01102b01"
        ),
    ),
    # select parse_json(<'[' * 40 + '1' + ']' * 40>) as v
    (
        "array-40-deep",
        "010000",
        (
            "0301009e0301009a03010096030100920301008e0301008a03010086030100820301007e0301007a03010076030100720301"
            "006e0301006a03010066030100620301005e0301005a03010056030100520301004e0301004a03010046030100420301003e"
            "0301003a03010036030100320301002e0301002a03010026030100220301001e0301001a03010016030100120301000e0301"
            "000a03010006030100020c01"
        ),
    ),
    # select parse_json('[{"a": 1, "b": 2}, {"b": 3, "c": 4}, {"a": 5}]') as v
    (
        "array-of-objects",
        "010300010203616263",
        ("0303000b161d020200010002040c010c02020201020002040c030c0402010000020c05"),
    ),
    # select CAST(DATE'2024-01-02' AS VARIANT) as v
    ("date", "010000", "2c0c4d0000"),
    # select CAST(TIMESTAMP'2024-01-02 03:04:05.123456 UTC' AS VARIANT) as v
    ("timestamp", "010000", "3080b54fc0ed0d0600"),
    # select CAST(TIMESTAMP_NTZ'2024-01-02 03:04:05.123456' AS VARIANT) as v
    ("timestamp-ntz", "010000", "3480b54fc0ed0d0600"),
    # select CAST(X'0102' AS VARIANT) as v
    ("binary", "010000", "3c020000000102"),
    # select CAST(1.5F AS VARIANT) as v
    ("float", "010000", "380000c03f"),
    # select CAST(1.5D AS VARIANT) as v
    ("double", "010000", "1c000000000000f83f"),
    # select CAST(CAST(123.45 AS DECIMAL(5,2)) AS VARIANT) as v
    ("cast-decimal4", "010000", "200239300000"),
    # select CAST(CAST(1234567890.123456 AS DECIMAL(18,6)) AS VARIANT) as v
    ("cast-decimal8", "010000", "2406c0ba8a3cd5620400"),
    # select CAST(CAST('12345678901234567890.123456789012345678' AS DECIMAL(38,18)) AS VARIANT) as v
    ("cast-decimal16", "010000", "28124ef338de509049c4133302f0f6b04909"),
    # select CAST(CAST(0 AS DECIMAL(38,38)) AS VARIANT) as v
    ("decimal16-scale-38", "010000", "282600000000000000000000000000000000"),
    # select CAST(CAST(1 AS TINYINT) AS VARIANT) as v
    ("tinyint", "010000", "0c01"),
    # select CAST(CAST(1 AS SMALLINT) AS VARIANT) as v
    ("smallint", "010000", "0c01"),
    # select CAST(CAST(1 AS INT) AS VARIANT) as v
    ("int", "010000", "0c01"),
    # select CAST(CAST(1 AS BIGINT) AS VARIANT) as v
    ("bigint", "010000", "0c01"),
    # select CAST(repeat('é', 40) AS VARIANT) as v
    (
        "long-unicode-string",
        "010000",
        (
            "4050000000c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3"
            "a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9c3a9"
        ),
    ),
    # select CAST(array(CAST(NULL AS INT), 1) AS VARIANT) as v
    ("array-with-null", "010000", "0302000103000c01"),
    # select to_variant_object(named_struct('b', DATE'2024-01-01', 'a', X'ff', 'c', array(1.5F, 2.5D)))
    #     as v
    (
        "variant-object-of-struct",
        "010300010203626163",
        ("020301000205000b222c0b4d00003c01000000ff03020009121c000000000000f83f1c0000000000000440"),
    ),
    # select to_variant_object(map('z', 1, 'y', 2)) as v
    ("variant-object-of-map", "01020001027a79", "020201000200040c010c02"),
    # select variant_get(parse_json('{"a": {"b": 1, "c": [2]}, "d": 3}'), '$.a', 'variant') as v
    ("variant-get-sub-object", "01020001026263", "020200010002080c01030100020c02"),
    # select CAST(CAST(-99999.99999 AS DECIMAL(10,5)) AS VARIANT) as v
    ("cast-decimal8-negative", "010000", "2405011cf4abfdffffff"),
]

EMPTY_METADATA = bytes.fromhex("010000")


# --- a tiny encoder, to craft the spec's other shapes and the malformed values -----------------------


def _le(n: int, size: int) -> bytes:
    return n.to_bytes(size, "little")


def _metadata(
    *keys: str | bytes, sorted_strings: bool = False, offset_size: int = 1, extra: int = 0
) -> bytes:
    raw = [k.encode() if isinstance(k, str) else k for k in keys]
    offsets = [0]
    for key in raw:
        offsets.append(offsets[-1] + len(key))
    header = 1 | (0x10 if sorted_strings else 0) | (offset_size - 1) << 6 | extra
    body = _le(len(raw), offset_size) + b"".join(_le(o, offset_size) for o in offsets)
    return bytes([header]) + body + b"".join(raw)


def _primitive(type_id: int, payload: bytes = b"") -> bytes:
    return bytes([type_id << 2]) + payload


def _short_string(data: bytes) -> bytes:
    return bytes([len(data) << 2 | 1]) + data


def _array(*elements: bytes, offset_size: int = 1, large: bool = False, extra: int = 0) -> bytes:
    offsets = [0]
    for element in elements:
        offsets.append(offsets[-1] + len(element))
    header = ((offset_size - 1) | (4 if large else 0) | extra) << 2 | 3
    count = _le(len(elements), 4 if large else 1)
    return bytes([header]) + count + b"".join(_le(o, offset_size) for o in offsets) + b"".join(elements)


def _object(
    *fields: tuple[int, bytes],
    id_size: int = 1,
    offset_size: int = 1,
    large: bool = False,
    reverse: bool = False,
) -> bytes:
    """Field ids in the order given; their values laid out in that order, or reversed."""
    layout = list(reversed(range(len(fields)))) if reverse else list(range(len(fields)))
    starts, position = {}, 0
    for index in layout:
        starts[index] = position
        position += len(fields[index][1])
    header = ((offset_size - 1) | (id_size - 1) << 2 | (16 if large else 0)) << 2 | 2
    ids = b"".join(_le(fid, id_size) for fid, _ in fields)
    offsets = b"".join(_le(starts[i], offset_size) for i in range(len(fields))) + _le(position, offset_size)
    count = _le(len(fields), 4 if large else 1)
    return bytes([header]) + count + ids + offsets + b"".join(fields[index][1] for index in layout)


def _nested_arrays(levels: int) -> bytes:
    value = _primitive(0)
    for _ in range(levels):
        value = _array(value, offset_size=2)
    return value


# --- known-good values --------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "metadata", "value"), SPARK_VECTORS, ids=[v[0] for v in SPARK_VECTORS])
def test_spark_encoded_values_are_valid(name: str, metadata: str, value: str) -> None:
    assert check_value(bytes.fromhex(metadata), bytes.fromhex(value)) is None


HAND_MADE_GOOD: list[tuple[str, bytes, bytes]] = [
    ("time_ntz", EMPTY_METADATA, _primitive(17, _le(45_296_789_000, 8))),
    ("timestamp_nanos", EMPTY_METADATA, _primitive(18, _le(1_704_164_645_123_456_789, 8))),
    ("timestamp_ntz_nanos", EMPTY_METADATA, _primitive(19, _le(1_704_164_645_123_456_789, 8))),
    ("uuid", EMPTY_METADATA, _primitive(20, bytes(range(16)))),
    ("long-string-encoding-of-a-short-string", EMPTY_METADATA, _primitive(16, _le(2, 4) + b"hi")),
    ("empty-binary", EMPTY_METADATA, _primitive(15, _le(0, 4))),
    ("decimal4-9-digits-scale-9", EMPTY_METADATA, _primitive(8, b"\x09" + _le(999_999_999, 4))),
    (
        "decimal16-38-digits",
        EMPTY_METADATA,
        _primitive(10, b"\x00" + (-(10**38) + 1).to_bytes(16, "little", signed=True)),
    ),
    ("array-is-large-4-byte-offsets", EMPTY_METADATA, _array(_primitive(1), offset_size=4, large=True)),
    ("array-3-byte-offsets", EMPTY_METADATA, _array(_short_string(b"a"), _primitive(0), offset_size=3)),
    ("array-reserved-header-bits", EMPTY_METADATA, _array(_primitive(0), extra=0b111000)),
    (
        "metadata-reserved-bit-and-4-byte-offsets",
        _metadata("a", offset_size=4, extra=0x20),
        _object((0, _primitive(1))),
    ),
    (
        "metadata-sorted",
        _metadata("a", "b", "c", sorted_strings=True),
        _object((0, _primitive(1)), (2, _primitive(2))),
    ),
    (
        "metadata-unsorted-with-duplicates",
        _metadata("b", "a", "b"),
        _object((1, _primitive(1)), (2, _primitive(2))),
    ),
    ("metadata-unused-keys", _metadata("z", "y", "x"), _primitive(0)),
    (
        "object-values-in-reverse-order",
        _metadata("a", "b"),
        _object((0, _short_string(b"1")), (1, _primitive(0)), reverse=True),
    ),
    (
        "object-is-large-4-byte-ids-and-offsets",
        _metadata("k"),
        _object((0, _primitive(1)), id_size=4, offset_size=4, large=True),
    ),
    ("object-keys-by-unsigned-bytes", _metadata("é", "z"), _object((1, _primitive(0)), (0, _primitive(0)))),
    ("object-keys-are-case-sensitive", _metadata("a", "A"), _object((1, _primitive(0)), (0, _primitive(0)))),
    ("empty-key", _metadata(""), _object((0, _primitive(0)))),
    (f"nested-{MAX_DEPTH}-deep", EMPTY_METADATA, _nested_arrays(MAX_DEPTH)),
]


@pytest.mark.parametrize(("name", "metadata", "value"), HAND_MADE_GOOD, ids=[v[0] for v in HAND_MADE_GOOD])
def test_other_spec_shapes_are_valid(name: str, metadata: bytes, value: bytes) -> None:
    assert check_value(metadata, value) is None


def _variant_arrays(arr: pa.Array) -> Iterator[pa.Array]:
    """Every Variant struct array inside `arr`, with the NULLs of the arrays around it."""
    typ = arr.type
    if pa.types.is_struct(typ):
        names = {typ.field(i).name for i in range(typ.num_fields)}
        if names == {"metadata", "value"}:
            yield arr
        else:
            for child in arr.flatten():
                yield from _variant_arrays(child)
    elif pa.types.is_map(typ):
        yield from _variant_arrays(arr.items)
    elif pa.types.is_list(typ):
        yield from _variant_arrays(arr.flatten())


def test_every_variant_in_the_spark_golden_table_is_valid() -> None:
    checked: dict[str, int] = {}
    for path in sorted(GOLDEN.glob("*.parquet")):
        table = pq.read_table(path)
        for name in table.column_names:
            for chunk in table.column(name).chunks:
                for variants in _variant_arrays(chunk):
                    check_array(variants, name)
                    checked[name] = checked.get(name, 0) + len(variants) - variants.null_count
                    for row in variants.drop_null().to_pylist():
                        assert check_value(row["metadata"], row["value"]) is None
    # 102 rows; per row: v, 3 array elements, the struct's, the map's non-NULL value, 3 in the array of
    # structs (one struct holds a NULL variant) and 1 in the struct of an array
    assert checked == {
        "v": 102,
        "array_of_variants": 306,
        "struct_of_variants": 102,
        "map_of_variants": 102,
        "array_of_struct_of_variants": 306,
        "struct_of_array_of_variants": 102,
    }


def test_a_corrupted_golden_value_is_found_at_its_row() -> None:
    path = sorted(GOLDEN.glob("part-00000-16c*.parquet"))[0]
    column = pq.read_table(path).column("v").combine_chunks()
    metadata = column.field("metadata").to_pylist()
    metadata[7] = b"\x02" + metadata[7][1:]
    bad = pa.StructArray.from_arrays(
        [column.field("value"), pa.array(metadata, pa.binary())], ["value", "metadata"]
    )
    with pytest.raises(
        InvalidArgumentError, match=r"column 'v': row 7 is not a valid Variant \(metadata version 2"
    ):
        check_array(bad, "v")


# --- malformed values ---------------------------------------------------------------------------------

_KEYS_ABC = _metadata("a", "b", "c")
_DECIMAL16_39_DIGITS = (10**38).to_bytes(16, "little", signed=True)
# an array holding an object holding MAX_DEPTH - 1 nested arrays: MAX_DEPTH + 1 levels in all
_DEEP_IN_OBJECT = _array(_object((0, _nested_arrays(MAX_DEPTH - 1)), offset_size=2), offset_size=2)

BAD: list[tuple[str, bytes, bytes, str]] = [
    # metadata
    ("metadata-empty", b"", _primitive(0), "metadata is empty"),
    ("metadata-version-2", b"\x02\x00\x00", _primitive(0), "metadata version 2 is not 1"),
    ("metadata-version-0", b"\x00\x00\x00", _primitive(0), "metadata version 0 is not 1"),
    ("metadata-no-dictionary-size", b"\x41\x00", _primitive(0), "metadata is truncated"),
    (
        "metadata-truncated-offsets",
        b"\x01\x03\x00\x01",
        _primitive(0),
        "metadata is truncated: a 3-entry dictionary",
    ),
    ("metadata-huge-dictionary-size", b"\xc1\xff\xff\xff\xff\x00", _primitive(0), "metadata is truncated"),
    ("metadata-first-offset-not-0", b"\x01\x01\x01\x02ab", _primitive(0), "first dictionary offset is 1"),
    (
        "metadata-offset-out-of-bounds",
        b"\x01\x01\x00\x05ab",
        _primitive(0),
        "last dictionary offset 5 is past the end",
    ),
    (
        "metadata-trailing-bytes",
        _metadata("a") + b"x",
        _primitive(0),
        "last dictionary offset 1 is short of the end",
    ),
    (
        "metadata-decreasing-offsets",
        b"\x01\x02\x00\x03\x02ab",
        _primitive(0),
        "offsets decrease at entry 2",
    ),
    (
        "metadata-sorted-but-not",
        _metadata("b", "a", sorted_strings=True),
        _primitive(0),
        "entry 1 'a' sorts before",
    ),
    (
        "metadata-sorted-but-duplicate",
        _metadata("a", "a", sorted_strings=True),
        _primitive(0),
        "entry 1 'a' duplicates",
    ),
    ("metadata-bad-utf8", _metadata(b"\xff"), _primitive(0), "dictionary entry 0 is not valid UTF-8"),
    (
        "metadata-utf8-surrogate",
        _metadata(b"\xed\xa0\x80"),
        _primitive(0),
        "dictionary entry 0 is not valid UTF-8",
    ),
    # primitives
    ("value-empty", EMPTY_METADATA, b"", "value at byte 0 is empty"),
    ("int32-truncated", EMPTY_METADATA, _primitive(5, b"\x01\x02"), "int32 at byte 0 is truncated"),
    ("double-truncated", EMPTY_METADATA, _primitive(7, bytes(7)), "double at byte 0 is truncated"),
    ("uuid-truncated", EMPTY_METADATA, _primitive(20, bytes(15)), "uuid at byte 0 is truncated"),
    (
        "string-length-truncated",
        EMPTY_METADATA,
        _primitive(16, b"\x01\x00"),
        "string length at byte 0 is truncated",
    ),
    (
        "string-longer-than-its-bytes",
        EMPTY_METADATA,
        _primitive(16, _le(2**31, 4) + b"ab"),
        "string at byte 0 is truncated",
    ),
    ("binary-truncated", EMPTY_METADATA, _primitive(15, _le(3, 4) + b"ab"), "binary at byte 0 is truncated"),
    ("unknown-primitive-21", EMPTY_METADATA, _primitive(21), "unknown primitive type id 21"),
    ("unknown-primitive-63", EMPTY_METADATA, _primitive(63, bytes(8)), "unknown primitive type id 63"),
    (
        "short-string-bad-utf8",
        EMPTY_METADATA,
        _short_string(b"\xc3\x28"),
        "short string at byte 0 is not valid UTF-8",
    ),
    (
        "short-string-truncated",
        EMPTY_METADATA,
        _short_string(b"abc")[:-1],
        "short string at byte 0 is truncated",
    ),
    (
        "string-bad-utf8",
        EMPTY_METADATA,
        _primitive(16, _le(2, 4) + b"\xc3\x28"),
        "string at byte 0 is not valid UTF-8",
    ),
    (
        "decimal4-scale-10",
        EMPTY_METADATA,
        _primitive(8, b"\x0a" + _le(1, 4)),
        "decimal4 scale 10 at byte 0 is more than 9",
    ),
    (
        "decimal8-scale-19",
        EMPTY_METADATA,
        _primitive(9, b"\x13" + _le(1, 8)),
        "decimal8 scale 19 at byte 0 is more than 18",
    ),
    (
        "decimal16-scale-39",
        EMPTY_METADATA,
        _primitive(10, b"\x27" + _le(1, 16)),
        "decimal16 scale 39 at byte 0 is more than 38",
    ),
    (
        "decimal4-10-digits",
        EMPTY_METADATA,
        _primitive(8, b"\x00" + _le(10**9, 4)),
        "decimal4 at byte 0 has more than 9 digits",
    ),
    (
        "decimal16-39-digits",
        EMPTY_METADATA,
        _primitive(10, b"\x00" + _DECIMAL16_39_DIGITS),
        "has more than 38 digits",
    ),
    (
        "decimal-truncated",
        EMPTY_METADATA,
        _primitive(9, b"\x02" + bytes(7)),
        "decimal8 at byte 0 is truncated",
    ),
    ("trailing-garbage", EMPTY_METADATA, _primitive(0) + b"\x00", "1 unused bytes after the value"),
    (
        "trailing-garbage-after-array",
        EMPTY_METADATA,
        _array(_primitive(1)) + b"xy",
        "2 unused bytes after the value",
    ),
    # objects
    (
        "object-field-id-outside",
        _KEYS_ABC,
        _object((7, _primitive(0))),
        "object field id 7 is outside the 3-entry dictionary",
    ),
    (
        "object-keys-not-sorted",
        _KEYS_ABC,
        _object((1, _primitive(0)), (0, _primitive(0))),
        "field 'a' after 'b' (not sorted)",
    ),
    (
        "object-same-id-twice",
        _KEYS_ABC,
        _object((0, _primitive(0)), (0, _primitive(0))),
        "has field 'a' twice",
    ),
    (
        "object-same-name-twice",
        _metadata("a", "a"),
        _object((0, _primitive(0)), (1, _primitive(0))),
        "has field 'a' twice",
    ),
    (
        "object-header-truncated",
        EMPTY_METADATA,
        bytes([0x12 << 2 | 2, 1, 0]),
        "object header at byte 0 is truncated",
    ),
    ("object-ids-truncated", _KEYS_ABC, bytes([2, 3, 0, 1]), "object of 3 fields at byte 0 is truncated"),
    (
        "object-huge-count",
        _KEYS_ABC,
        bytes([0x10 << 2 | 2]) + _le(2**32 - 1, 4),
        "object of 4294967295 fields",
    ),
    (
        "object-offsets-past-end",
        _KEYS_ABC,
        bytes([2, 1, 0, 0, 9, 0]),
        "object of 1 fields at byte 0 is truncated",
    ),
    (
        "object-shared-value",
        _KEYS_ABC,
        bytes([2, 2, 0, 1, 0, 0, 1, 0]),
        "two fields share the value at offset 0",
    ),
    ("object-no-value-at-0", _KEYS_ABC, bytes([2, 1, 0, 1, 2, 0, 0]), "no field value starts at offset 0"),
    (
        "object-offset-past-values",
        _KEYS_ABC,
        bytes([2, 2, 0, 1, 0, 3, 1, 0]),
        "field offset 3 is past the end",
    ),
    ("object-empty-with-bytes", EMPTY_METADATA, bytes([2, 0, 1, 0]), "no field value starts at offset 0"),
    (
        "object-bad-nested-value",
        _KEYS_ABC,
        _object((0, _primitive(0)), (1, _short_string(b"\xff"))),
        "short string at byte 8",
    ),
    (
        "object-value-shorter-than-slot",
        _KEYS_ABC,
        bytes([2, 1, 0, 0, 2, 0, 0]),
        "1 unused bytes after the value at byte 5",
    ),
    # arrays
    (
        "array-header-truncated",
        EMPTY_METADATA,
        bytes([3 | 4 << 2, 1, 0]),
        "array header at byte 0 is truncated",
    ),
    (
        "array-offsets-truncated",
        EMPTY_METADATA,
        bytes([3, 2, 0, 1]),
        "array of 2 elements at byte 0 is truncated",
    ),
    (
        "array-offsets-past-end",
        EMPTY_METADATA,
        bytes([3, 1, 0, 10, 0]),
        "array of 1 elements at byte 0 is truncated",
    ),
    (
        "array-huge-count",
        EMPTY_METADATA,
        bytes([3 | 4 << 2]) + _le(2**32 - 1, 4),
        "array of 4294967295 elements",
    ),
    ("array-first-offset-not-0", EMPTY_METADATA, bytes([3, 1, 1, 2, 0, 0]), "its first offset is 1, not 0"),
    (
        "array-decreasing-offsets",
        EMPTY_METADATA,
        bytes([3, 2, 0, 2, 1, 0, 0]),
        "offsets decrease at element 1",
    ),
    (
        "array-empty-slot",
        EMPTY_METADATA,
        bytes([3, 2, 0, 0, 1, 0]),
        "offsets leave an empty slot at element 0",
    ),
    (
        "array-element-truncated",
        EMPTY_METADATA,
        _array(_primitive(5, bytes(2))),
        "int32 at byte 4 is truncated",
    ),
    (
        "array-element-shorter-than-slot",
        EMPTY_METADATA,
        bytes([3, 1, 0, 2, 0, 0]),
        "1 unused bytes after the value at byte 4",
    ),
    (
        "array-element-overruns-slot",
        EMPTY_METADATA,
        bytes([3, 2, 0, 1, 3, 12, 1, 0]),
        "int8 at byte 5 is truncated",
    ),
    (
        "array-element-unknown-type",
        EMPTY_METADATA,
        _array(_primitive(0), _primitive(30)),
        "unknown primitive type id 30 at byte 6",
    ),
    (
        f"nested-{MAX_DEPTH + 1}-deep",
        EMPTY_METADATA,
        _nested_arrays(MAX_DEPTH + 1),
        f"nested deeper than {MAX_DEPTH} levels",
    ),
    ("object-in-arrays-too-deep", _KEYS_ABC, _DEEP_IN_OBJECT, "nested deeper than"),
]


@pytest.mark.parametrize(("name", "metadata", "value", "reason"), BAD, ids=[b[0] for b in BAD])
def test_malformed_values_are_refused_with_a_reason(
    name: str, metadata: bytes, value: bytes, reason: str
) -> None:
    got = check_value(metadata, value)
    assert got is not None
    assert reason in got


@pytest.mark.parametrize(("name", "metadata", "value", "reason"), BAD, ids=[b[0] for b in BAD])
def test_check_array_names_the_column_the_row_and_the_reason(
    name: str, metadata: bytes, value: bytes, reason: str
) -> None:
    good = next((bytes.fromhex(m), bytes.fromhex(v)) for n, m, v in SPARK_VECTORS if n == "nested-object")
    arr = _struct([good, None, good, (metadata, value), good])
    with pytest.raises(InvalidArgumentError) as caught:
        check_array(arr, "v")
    message = str(caught.value)
    assert message.startswith("column 'v': row 3 is not a valid Variant (")
    assert message.endswith("); nothing was written")
    assert reason in message
    assert (
        message
        == f"column 'v': row 3 is not a valid Variant ({check_value(metadata, value)}); nothing was written"
    )


# --- check_array ----------------------------------------------------------------------------------------


def _struct(
    rows: Sequence[tuple[bytes, bytes] | None],
    *,
    value_first: bool = False,
    binary: pa.DataType | None = None,
) -> pa.StructArray:
    """A Variant struct array; a None row is a NULL slot whose children hold garbage."""
    binary = binary or pa.binary()
    metadata = pa.array([r[0] if r else b"\x07garbage" for r in rows], binary)
    value = pa.array([r[1] if r else b"\xff\xff" for r in rows], binary)
    mask = pa.array([r is None for r in rows], pa.bool_())
    if value_first:
        return pa.StructArray.from_arrays([value, metadata], ["value", "metadata"], mask=mask)
    return pa.StructArray.from_arrays([metadata, value], ["metadata", "value"], mask=mask)


_GOOD_ROWS = [(bytes.fromhex(m), bytes.fromhex(v)) for _, m, v in SPARK_VECTORS]
_BAD_ROW = (b"\x02\x00\x00", b"\x00")


@pytest.mark.parametrize("value_first", [False, True])
@pytest.mark.parametrize("binary", [pa.binary(), pa.large_binary()], ids=["binary", "large_binary"])
def test_check_array_accepts_spark_values_in_either_child_order(
    value_first: bool, binary: pa.DataType
) -> None:
    check_array(_struct([*_GOOD_ROWS, None], value_first=value_first, binary=binary), "v")
    with pytest.raises(InvalidArgumentError, match=f"row {len(_GOOD_ROWS) + 1} is not"):
        check_array(_struct([*_GOOD_ROWS, None, _BAD_ROW], value_first=value_first, binary=binary), "v")


def test_null_slots_are_skipped() -> None:
    check_array(_struct([None, None]), "v")
    check_array(_struct([None, _GOOD_ROWS[0], None]), "v")
    check_array(pa.array([None, None], pa.struct([("metadata", pa.binary()), ("value", pa.binary())])), "v")


def test_a_null_child_in_a_non_null_slot_is_refused() -> None:
    typ = pa.struct([("metadata", pa.binary()), ("value", pa.binary())])
    with pytest.raises(InvalidArgumentError, match=r"row 1 is not a valid Variant \(value is NULL\)"):
        check_array(pa.array([None, {"metadata": EMPTY_METADATA, "value": None}], typ), "v")
    with pytest.raises(InvalidArgumentError, match=r"row 0 is not a valid Variant \(metadata is NULL\)"):
        check_array(pa.array([{"metadata": None, "value": b"\x00"}], typ), "v")


def test_chunked_arrays_count_rows_across_chunks() -> None:
    chunked = pa.chunked_array(
        [_struct([_GOOD_ROWS[0], None]), _struct([]), _struct([_GOOD_ROWS[1], _BAD_ROW])]
    )
    with pytest.raises(
        InvalidArgumentError, match=r"column 'c': row 3 is not a valid Variant \(metadata version 2"
    ):
        check_array(chunked, "c")
    check_array(pa.chunked_array([_struct(_GOOD_ROWS[:3]), _struct(_GOOD_ROWS[3:])]), "c")
    check_array(pa.chunked_array([], _struct([]).type), "c")


def test_sliced_arrays_count_rows_from_the_slice() -> None:
    arr = _struct([_BAD_ROW, _GOOD_ROWS[0], None, _BAD_ROW, _GOOD_ROWS[1]])
    with pytest.raises(InvalidArgumentError, match="row 2 is not"):
        check_array(arr.slice(1), "v")
    check_array(arr.slice(1, 2), "v")


def test_a_shared_metadata_is_checked_for_every_value() -> None:
    metadata = _metadata("a", "b")
    rows = [(metadata, _object((0, _primitive(0))))] * 3 + [(metadata, _object((5, _primitive(0))))]
    with pytest.raises(InvalidArgumentError, match=r"row 3 .*field id 5 is outside the 2-entry dictionary"):
        check_array(_struct(rows), "v")


@pytest.mark.parametrize(
    "typ",
    [
        pa.binary(),
        pa.struct([("metadata", pa.binary())]),
        pa.struct([("metadata", pa.binary()), ("value", pa.string())]),
        pa.struct([("metadata", pa.binary()), ("value", pa.binary()), ("typed_value", pa.int64())]),
        pa.struct([("meta", pa.binary()), ("value", pa.binary())]),
    ],
    ids=["binary", "no-value", "string-value", "shredded", "misnamed"],
)
def test_a_column_that_is_not_an_unshredded_variant_is_refused(typ: pa.DataType) -> None:
    with pytest.raises(
        InvalidArgumentError, match=r"column 'v' is not an unshredded Variant .*nothing was written"
    ):
        check_array(pa.array([], typ), "v")


def test_mutated_values_give_a_verdict_never_an_exception() -> None:
    """Random byte changes, cuts and insertions in the good vectors: always None or a reason."""
    rng = random.Random(20240102)
    vectors = _GOOD_ROWS + [(m, v) for _, m, v in HAND_MADE_GOOD]
    refused = 0
    for _ in range(5000):
        metadata, value = (bytearray(b) for b in rng.choice(vectors))
        target = metadata if rng.random() < 0.2 else value
        where = rng.randrange(len(target) + 1)
        action = rng.randrange(3)
        if action == 0 and where < len(target):
            target[where] = rng.randrange(256)
        elif action == 1:
            del target[where:]
        else:
            target.insert(where, rng.randrange(256))
        reason = check_value(bytes(metadata), bytes(value))
        assert reason is None or isinstance(reason, str)
        refused += reason is not None
    assert refused > 2500
