"""Source files of the public data sets: relative path, download URL and sha256.

Generated from the local copy in ``/work/shared/data`` (see ``datasets/*.md`` for how far each URL
and checksum is verified). ``url=None`` means there is no public download for that file: point
``ASSESSORS_DATA_DIR`` at a local copy. ``sha256=None`` means "not recorded": the file is
downloaded without a check (and a warning is logged).
"""
from __future__ import annotations

from typing import NamedTuple


class SourceFile(NamedTuple):
    path: str  # relative to the data set folder
    url: str | None
    sha256: str | None


_PB = "https://raw.githubusercontent.com/Kinds-of-Intelligence-CFI/PredictaBoard/{commit}/llm_data/llm_performance_data/{name}"
# PredictaBoard's prompt CSVs are not in its GitHub tree; they were exported from the
# kvoudouris/PredictaBoard_Benchmarks Hugging Face data set. This mirror path is unverified.
_PB_PROMPTS = "https://huggingface.co/datasets/kvoudouris/PredictaBoard_Benchmarks/resolve/main/prompts/{name}"
_KOR = "https://raw.githubusercontent.com/Kinds-of-Intelligence-CFI/benchmark-ground-truth-predictability/main/results/{dataset}/{name}"
_RD = "https://raw.githubusercontent.com/shuhao02/RouterDC/1963d6874b69c94309ea37a34d7d4cd6f527e7c5/datasets/routerbench_zs/{name}"


def _files(url: str | None, folder: str, checksums: dict[str, str | None]) -> list[SourceFile]:
    """``{file name: sha256}`` under ``folder`` as source files; ``url`` has a ``{name}`` field (None: no
    public download). Each file name is written once: its path and URL are built from it."""
    return [SourceFile(folder + name, url and url.format(name=name), sha) for name, sha in checksums.items()]


SOURCES: dict[str, list[SourceFile]] = {
    "open_llm_leaderboard_v2": [
        *_files(_PB_PROMPTS, "prompts/", {
            "bbh_boolean_expressions_prompts.csv": "62e68858bf8802964ece81d32b48d6406e3a0d59ea5c9972a3ede3b970198731",
            "bbh_causal_judgement_prompts.csv": "80fc849bcb80e7a6d1959107ec82aa3d4659f1beefb6e99fb96c8e9be2fef939",
            "bbh_date_understanding_prompts.csv": "d010c40b4510526554dd289afc98cec8c26386c717af1758d53baf7620df6a7f",
            "bbh_disambiguation_qa_prompts.csv": "49a5ed453eed939b946e3dcdcf6d6559c7e9e961d90231c12d0c8fabb937ca87",
            "bbh_formal_fallacies_prompts.csv": "acd0c7ed2c299be05e03e57b6d6f0b3e403a6ca3c654cbf8dc0137158bcfaf00",
            "bbh_geometric_shapes_prompts.csv": "6b4be1f878e04441db25b5722cb930e7407413c45fbf2a85203b2bfe016ed340",
            "bbh_hyperbaton_prompts.csv": "2e75c7dc55db097ce683a651dbfb4084436f10552f16bed3f0e8f99f2e702bb2",
            "bbh_logical_deduction_five_objects_prompts.csv": "86921dbfdecd8e85ea550718a034e164dbc1c893ecc47de8aca3fffcc65472ee",
            "bbh_logical_deduction_seven_objects_prompts.csv": "6cd04106b8a4bdf207a6cd7847a567e974571e24de6386bb7c76dfbf4e77ed3d",
            "bbh_logical_deduction_three_objects_prompts.csv": "0f581522beedecabf00bd2519dc48c0d9a71b8c61feab9fb283bb8df754a13f6",
            "bbh_movie_recommendation_prompts.csv": "7a1046b4aac3ad2960a3778df42e43e722835186b10eb57747a5b61aefdab97d",
            "bbh_navigate_prompts.csv": "ac67e44003b66b39f072b06df252beca82271e92ab490d7ee16e9a46a46b37b0",
            "bbh_object_counting_prompts.csv": "edb3c6864b4afb913ebb4ae00f35e952dcfd5e9941ad29dc63e620246b7d9934",
            "bbh_penguins_in_a_table_prompts.csv": "c8df5fddc2a9c9179fdb8fa6d51fd39212c3a70510142336479606c5bc93e939",
            "bbh_reasoning_about_colored_objects_prompts.csv": "663077f5d5484de4ccc784f122197c707ac83c207321a2747acbc6a692c72953",
            "bbh_ruin_names_prompts.csv": "08bd07a656598118fb69d2aa5c21a88973ca36513ac9ca98843378bebffff0c1",
            "bbh_salient_translation_error_detection_prompts.csv": "f31cbb8874b7e8224079d6b4900fb0255cb4fa9cb5a3b56670be9ecfa80a5bf3",
            "bbh_snarks_prompts.csv": "f280ebffb919734a96efed76577095cf14347d5b31630bcdd5a09346c572f998",
            "bbh_sports_understanding_prompts.csv": "76cf7a41dfb4d1d6a992eacbfeab9899ba3f4a148227a668f66520e8a829ff84",
            "bbh_temporal_sequences_prompts.csv": "9a1883cdae4d576cd6d88e5f3c32bac4ad892235714025c2a6fc22db8632a7fa",
            "bbh_tracking_shuffled_objects_five_objects_prompts.csv": "2bbc2ddecb18b0790d54ba4b9508985aecfb1499bdd47e6216ebc32aaea12409",
            "bbh_tracking_shuffled_objects_seven_objects_prompts.csv": "9ec34e51899a8ac065d51bcbab85cf9e671d924c702e6136aff8a569ed3c4d13",
            "bbh_tracking_shuffled_objects_three_objects_prompts.csv": "4ee2fac19cd74cdae06af7126295b20e5217f9ad40c402138f11e554dfb01220",
            "bbh_web_of_lies_prompts.csv": "1a40b4ba8944c592c1ca79eac476dc562e1ab768a7acd031366fdb481129a8e3",
            "musr_murder_mysteries_prompts.csv": "36a8e80786586f7d93fcf2e1212c11489d36afa962c5562d3103ad83f66a864b",
            "musr_object_placements_prompts.csv": "1ea166b95314e33b297b21637e6cb60b1a3fe13172097b1c90db7934cc685681",
            "musr_team_allocation_prompts.csv": "f46117f4bd17a31aa0da859173551098da1cb63248039e52349e383256a6f3e7",
        }),
        *_files(_PB.format(commit="3c6860b52a370edc08c8448daba6a8f0bf76780c", name="{name}"), "results/", {
            "Big-Bench-Hard__boolean_expressions_results.csv": "102d0f58b98472a730da57a29ae36a3096343d5c44e88fe3edc990cb283a52f6",
            "Big-Bench-Hard__causal_judgement_results.csv": "6a561739d73c25f5f5323928dfc9ab4658fd33e450f221315b645741fad23bcd",
            "Big-Bench-Hard__date_understanding_results.csv": "324c11f3f00d21be5a5f4cfd8e5d7e10628663c4d0f87a0589d93c99434da486",
            "Big-Bench-Hard__geometric_shapes_results.csv": "5ec14b3dceb2d9a5f17c98c7178d82e86fdc7426992f5c1a6d64ceff20cb753e",
            "Big-Bench-Hard__movie_recommendation_results.csv": "85a4eaf85caa881cfecab29cffce21c5a3fa4e459beb2f3f96bc56ae35a54ad7",
            "Big-Bench-Hard__object_counting_results.csv": "4bfbdcb3967cc1cd9de2cd8551cec554fd4cdf8fb58e6ee854b7645e4fd2cc8b",
            "Big-Bench-Hard__penguins_in_a_table_results.csv": "e925c0a9b622834b3e393fa2c3c661bed27cab2bfa461381eebdb826ad2919d1",
            "Big-Bench-Hard__reasoning_about_colored_objects_results.csv": "d51b0f627ad62e2f00bf38174481abd8cdce0d778aa9c7f3360c43351c05a0d6",
            "Big-Bench-Hard__ruin_names_results.csv": "a4db2c5e810f4e310d582b90e3d20242820c5f75fd6584726c2c9b259b9d9352",
            "Big-Bench-Hard__salient_translation_error_detection_results.csv": "7db4b4566d491f5b9c15ecde717083559f28858c19ac5d5b4482718b1869f692",
            "Big-Bench-Hard__sports_understanding_results.csv": "45ec890cbaac57a5197747ff96837ae7b8b8affa5bceb05859bb06c91c553151",
            "Big-Bench-Hard__tracking_shuffled_objects_seven_objects_results.csv": "74a17074c5d0002e72d58cd4192f1786fff0dbad1799430c12e3376552bc6265",
            "Big-Bench-Hard__tracking_shuffled_objects_three_objects_results.csv": "03e88d53e18e8b4479d722220328a9b16c5a0cb28bb589ddc358319fedc3c575",
            "MMLU-Pro_results.csv": "f4932902e415dedeee86124026d3ec4159b95e6fe731a5cad57a01adbe32484d",
            "MuSR__team_allocation_results.csv": "4e59a3df3eb08d1923f353a1cfc855365153e7e4e0ccb3622de2a54de222d685",
        }),
        *_files(_PB.format(commit="7db083035e291bb019864680e4d185886f3ba301", name="{name}"), "results/", {
            "Big-Bench-Hard__disambiguation_qa_results.csv": "db179ad36da92dce244776d16b5937fb1ea36c7aed76d7233e369eab8688261b",
            "Big-Bench-Hard__formal_fallacies_results.csv": "4a960cae6e0ddae7ca069ad5febebe44208654bfefd8d919b7686e3483c7624a",
            "Big-Bench-Hard__hyperbaton_results.csv": "6fe6f6bc1eef38173c11e8a03ba755698a873885751776f4113f96dca43fe83b",
            "Big-Bench-Hard__logical_deduction_five_objects_results.csv": "4fde253604030d6fab76bf2960a09b3079742916df1127bddb3590c5591c7e65",
            "Big-Bench-Hard__logical_deduction_seven_objects_results.csv": "57566cd35107f504bb961a78262415b891273e11bc327951a20e4c38299762f1",
            "Big-Bench-Hard__logical_deduction_three_objects_results.csv": "9b66d196ea2b2403137aa6c0a679d6a82dedbf1da00602335f9710d4505d38c6",
            "Big-Bench-Hard__navigate_results.csv": "495eeb7ef3a813300a066d301399e3a06718b48cd5824ffc19576f2e9a048920",
            "Big-Bench-Hard__snarks_results.csv": "e6c6fd4d55c8f4283db041f501350717d92a282b555552e4fffc67b7d1413fcd",
            "Big-Bench-Hard__temporal_sequences_results.csv": "c450cdfb3193f28ec3ba8e2ebc40e9277499dfe54fc5e4ad6fd7857da8f0d136",
            "Big-Bench-Hard__tracking_shuffled_objects_five_objects_results.csv": "db6d4d131251c27ddf23347322e4000bd469d9fcf3499476d7ad289b5c8336fd",
            "Big-Bench-Hard__web_of_lies_results.csv": "3c1335273c447861410de9b5ca15c2d01a8a1fe1e68f381ed60fb86686865d6c",
            "MuSR__murder_mysteries_results.csv": "01d1a57ae4bd750f5dbecff4204f729705651c68edd512d95cff30a087310fdd",
            "MuSR__object_placements_results.csv": "e36c889756a06cd62be8089e1113db9e67bfca59d3eede9c139bf2d25d654caf",
        }),
    ],
    "openai_evals": [
        *_files(_KOR.format(dataset="causal_judgment", name="{name}"), "causal_judgment/", {
            "gpt-3.5-turbo-0125.jsonl": "5621012555e7037e0a3845a7120a14bcacf1be1545534afa7220e8ddad08a412",
            "gpt-3.5-turbo-0301.jsonl": "e439f902571f04550cd3287d4d6c7121820f214204f65755848f35f6a2fe11d9",
            "gpt-3.5-turbo-0613.jsonl": "ede4e563b95f5fd96039150009878af06c4dd4360f08f5e856a0e48c4379dbd2",
            "gpt-3.5-turbo-1106.jsonl": "5aa431c8549db54d4a12647de130638285eb36b685529299740143854260a0a4",
            "gpt-4-0125-preview.jsonl": "0e34d39ca296dd10db3081d6ba4cc79fdef5f19a84a4c72741740cc5ded1f9f7",
            "gpt-4-0314.jsonl": "1b471ca30b93862ff6ba5333923d23a2b9b8ee9372eb8eb6573301ca436e2b46",
            "gpt-4-0613.jsonl": "288c8aa274ac8da114d4455bcea970c81fa1a8d0145051aad235b70b31cf2a14",
            "gpt-4-1106-preview.jsonl": "2e69136ba3d9d848e395652e27498e594cffb4e3cb6f40da1d718f9cd06ca9a5",
            "text-ada-001.jsonl": "ea1fa6aa1ca593fd187e48bdf521e4f0ef33a1860d04ca0b9ad097de310d9ec6",
            "text-babbage-001.jsonl": "2a53f45231085f77fa0a36eab0534b427a6e777205248364da0c3b16b094e279",
            "text-curie-001.jsonl": "f2f87bfca0a0711f1ae14c81b0a3a08d1bca9251ca0e29ad78af8f7b879d3177",
            "text-davinci-001.jsonl": "b57da31504ebc70da9daf05c354dc93a33158381be4a54db88196939d59530f3",
            "text-davinci-002.jsonl": "4f6d45c7b14fa41cd58db26cacd96527ba3b158cae3088a0b76c098f332b9f0d",
            "text-davinci-003.jsonl": "edba6230a7a6dd8042d40ad48bf0d993e400cf8fa2562237002d8443a47c1de4",
        }),
        *_files(_KOR.format(dataset="moral_permissibility", name="{name}"), "moral_permissibility/", {
            "gpt-3.5-turbo-0125.jsonl": "293abc077bef0b00b20735f46f0787ffc57ff7d89c03920e731bdec699f43506",
            "gpt-3.5-turbo-0301.jsonl": "a4cdf376f087c67858d67701f5c73ae336cf39c0b0f3e7d22fe9fc748e58c6a9",
            "gpt-3.5-turbo-0613.jsonl": "8cc320b7befb4509143513cffecf8d10e70b83007203588fd35b89216a03ba8e",
            "gpt-3.5-turbo-1106.jsonl": "e5bac1be94b2aed3f19c30851ddf0bb5eebad719ca3a468cafe7063955eccede",
            "gpt-4-0125-preview.jsonl": "a82a95f59b8be00ee21c4e295385eec44b0ccff4fa55cac2c68ca9b5a5ef5f59",
            "gpt-4-0314.jsonl": "50e884926b7fc12ceecac66aaaa5ac21e695254a01840ddc033f5088f1c17b43",
            "gpt-4-0613.jsonl": "456cdd492464131d5e26f229a58d3d25e5da1a8c254a35d59a8e75eb0d80e802",
            "gpt-4-1106-preview.jsonl": "9d841e8968ac92e50fec3fe6d3f161d9c2a4cd272927fa1f5e3e19f6025707c6",
            "text-ada-001.jsonl": "8e68006003188280cbc64d98b37255e165b3d1d318e408b3f3e2c4df7483a40d",
            "text-babbage-001.jsonl": "5bdcbef576ccf870789f03f0b7087d84eac2785f34908fb6a33c85dc9d704dd9",
            "text-curie-001.jsonl": "5e5ceb4dafab6318e27d56b2b558c16f37371fc6ae29c9e109fdb68b25822ccb",
            "text-davinci-001.jsonl": "de9f2bf249e6bbce8fe2f784a8c378a42ee2be72eb6d25899dbc7b5991f65634",
            "text-davinci-002.jsonl": "6c2ce8e02456a30ac2104a25f4d6a03a60239dfb9a618bf30e1777f6f76ea8b6",
            "text-davinci-003.jsonl": "c2c2a8ef6d2646b8827c200debcbdf1ba475d2dbd45e261a381d5c43a14ccc60",
        }),
    ],
    "routerbench": [
        *_files(_RD, "", {
            "arc_challenge_test.csv": "7bffb55faca2e1f9d19f7197c652884780a1e0f7fe14bad5b2b1c6afbe7a6769",
            "arc_challenge_train.csv": "59e044850520be06f74dd9766b9ab4621d783f7fa5269d7dda118b9abb115d78",
            "mbpp_test.csv": "156fb843b706b765162d74f5fc4928322be5041791b45bd3e1bd732d998c4032",
            "mbpp_train.csv": "2a985adc3a3016b5ae4d62229722cdff9ece58aa1338206a6b12e4957304452b",
            "winograde_test.csv": "de7c8689d4b682c860b660988808ee2e40366b12076811e7891081facec4a2e1",
            "winograde_train.csv": "f6d54caab59bebb9facf3407c515a07a20faf4e75c639b7e91988ceaf312906a",
        }),
    ],
    # converted from joblib to npz for this project: no public download
    "score_matrices": [
        *_files(None, "", {
            "arc_challenge.npz": "15824585da68c1929d46756ce3b85fd8c0ca495af7b277c4cc9db1f258720b26",
            "commonsense.npz": "9ac2ebb11b71c7554496533c7adbb6a9ad3d85310a4226dd59176d3e0a286e80",
            "gsm.npz": "294f3580a055b43e915c9117e816351377a71995e69c99981b68e1aa0e8d95d2",
            "ifeval.npz": "87f6cab2e898b7e362e8e5d6dce18c981b4779f8d956e993013c18f7ba238e41",
            "legalbench.npz": "7471debe7bb86a5ac5c64d8489ac9e0f5cb966503e8d8f196781e621423b03a0",
            "math.npz": "9b528981a0996d44a23288367ca37b5284d2db0d95e914ba612e160413042b3b",
            "med_qa.npz": "eea3baa636c705b3cc987f26e04df20a498551564ebe224ecc360c2f4f20f003",
            "mmlu.npz": "801cff4686aa59117f6259bee02db1737bb3c6d61c40639786386e07d5c69deb",
            "mrpc.npz": "111b69fae6bd7ec3660532095d2c44ada215adeaa40582f8ec1574914d09d7a3",
            "musr.npz": "2c5b021721cace13001e322268bd2b7735280f2764c60265ab080c80e2dfc986",
            "openllm_math.npz": "0c952318baab29150d79e028e37dde9f4005e9b0b3c2a76f2ffabd32e279ba02",
            "qnli.npz": "1ecd5d05233ea8278052fc0227ce959b300a417a5263c8b51ee37516fbf98c70",
            "rte.npz": "0c236e745c18862977fee339b2ecc9e37fb53bbb10a0f887929395ca2df8c14b",
            "sst2.npz": "94b08a0d063912029ddbcc94671ad29af5eaef5b870f79d09efdd7eda122cbb9",
        }),
    ],
}
